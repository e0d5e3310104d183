import type { ReactNode } from 'react';
import { href } from '../router';

const TABS: Array<[string, string, (id: string) => string]> = [
  ['overview', 'Overview', (id) => href.run(id)],
  ['steps', 'Steps', (id) => href.run(id, 'steps')],
  ['rollouts', 'Rollouts', (id) => href.run(id, 'rollouts')],
  ['config', 'Config', (id) => href.run(id, 'config')],
  ['replay', 'Replay', (id) => href.replay(id)],
  ['sandbox', 'Sandbox', (id) => href.sandbox(id)],
];

/** Breadcrumbs (Runs › run › here) and the run's tabs; `current` is the tab shown. */
export function RunNav({ runId, current, crumbs = [] }: { runId: string; current: string | null; crumbs?: Array<[string, string | null]> }) {
  return (
    <>
      <nav className="crumbs" aria-label="breadcrumbs">
        <a href={href.runs()}>Runs</a>
        <span aria-hidden="true">›</span>
        <a href={href.run(runId)} className="mono">{runId}</a>
        {crumbs.map(([label, to]) => (
          <span key={label}>
            <span aria-hidden="true">›</span> {to ? <a href={to}>{label}</a> : <span aria-current="page">{label}</span>}
          </span>
        ))}
      </nav>
      <nav className="tabs" aria-label="run pages">
        {TABS.map(([key, label, to]) => (
          <a key={key} href={to(runId)} className={current === key ? 'tab active' : 'tab'} aria-current={current === key ? 'page' : undefined}>{label}</a>
        ))}
      </nav>
    </>
  );
}

/** A titled section of a page. */
export function Section({ title, children, aside, testId }: { title: string; children: ReactNode; aside?: ReactNode; testId?: string }) {
  return (
    <section className="section" data-testid={testId}>
      <header className="section-head">
        <h2>{title}</h2>
        {aside}
      </header>
      {children}
    </section>
  );
}
