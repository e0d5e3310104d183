import { useEffect } from 'react';
import { RolloutPage } from './pages/rollout.page';
import { ReplayPage } from './pages/replay.page';
import { RunPage } from './pages/run.page';
import { RunsPage } from './pages/runs.page';
import { SandboxPage } from './pages/sandbox.page';
import { StepPage } from './pages/step.page';
import { href, useRoute } from './router';

/** The dashboard: a header and the page the URL hash names. */
export function App() {
  const route = useRoute();
  useEffect(() => {
    const where = route.page === 'runs' || route.page === 'missing' ? 'runs' : `${route.page} · ${route.runId}`;
    document.title = `rstar · ${where}`;
    window.scrollTo(0, 0);
  }, [route]);
  return (
    <>
      <a className="skip" href="#content" onClick={(e) => { e.preventDefault(); document.getElementById('content')?.focus(); }}>Skip to content</a>
      <header className="top">
        <a href={href.runs()} className="brand">rstar</a>
        <span className="muted">runs · steps · rollouts · replay</span>
      </header>
      <div id="content" tabIndex={-1}>
        {route.page === 'runs' && <RunsPage />}
        {route.page === 'run' && <RunPage key={route.runId} runId={route.runId} tab={route.tab} />}
        {route.page === 'step' && <StepPage key={`${route.runId}/${route.step}`} runId={route.runId} step={route.step} />}
        {route.page === 'rollout' && <RolloutPage key={route.rolloutId} runId={route.runId} rolloutId={route.rolloutId} />}
        {route.page === 'replay' && <ReplayPage key={`${route.runId}/${route.step}`} runId={route.runId} step={route.step} />}
        {route.page === 'sandbox' && <SandboxPage key={route.runId} runId={route.runId} />}
        {route.page === 'missing' && <main><h1>Not found</h1><p>No page at {route.hash}. <a href={href.runs()}>All runs</a></p></main>}
      </div>
    </>
  );
}
