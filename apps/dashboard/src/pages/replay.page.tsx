import { useState, type ReactNode } from 'react';
import { api, ApiError, type ReplayView } from '../api';
import { Chip, Loading, Stat } from '../components/bits';
import { RunNav, Section } from '../components/run-nav';
import { useLoad } from '../hooks';
import { href } from '../router';
import type { Difference, RerunComparison } from '@rstar/run-views';

/** A recorded and a recomputed value side by side; array elements only on one side are highlighted. */
export function ValueDiff({ recorded, recomputed }: { recorded: unknown; recomputed: unknown }) {
  const show = (v: unknown, other: unknown, side: 'old' | 'new'): ReactNode => {
    if (Array.isArray(v) && Array.isArray(other)) {
      const o = new Set(other.map((x) => JSON.stringify(x)));
      return (
        <>
          [{v.map((x, i) => (
            <span key={i}>
              {i > 0 && ', '}
              <span className={o.has(JSON.stringify(x)) ? '' : `hl-${side}`}>{JSON.stringify(x)}</span>
            </span>
          ))}]
        </>
      );
    }
    return <span className={`hl-${side}`}>{v === undefined ? '(absent)' : JSON.stringify(v, null, 1)}</span>;
  };
  return (
    <div className="value-diff">
      <div><div className="io-label">recorded</div><pre className="io" data-testid="recorded">{show(recorded, recomputed, 'old')}</pre></div>
      <div><div className="io-label">recomputed today</div><pre className="io" data-testid="recomputed">{show(recomputed, recorded, 'new')}</pre></div>
    </div>
  );
}

function DifferenceCard({ d, line, runId }: { d: Difference; line: string; runId: string }) {
  return (
    <article className={`diff-card ${d.deterministic ? 'det' : 'timing'}`} data-testid="difference">
      <div className="mono diff-line" data-testid="verify-line">{line}</div>
      <div className="muted">
        event <span className="mono">{d.eventId}</span> · field <span className="mono">{d.field}</span> · step <a href={href.step(runId, d.step)}>{d.step}</a>
        {d.rolloutId ? <> · <a href={href.rollout(runId, d.rolloutId)}>open rollout</a></> : null}
      </div>
      <ValueDiff recorded={d.recorded} recomputed={d.recomputed} />
    </article>
  );
}

function Rerun({ r, runId }: { r: ReplayView['reruns'][number]; runId: string }) {
  const c: RerunComparison | null = r.comparison;
  return (
    <article className="rerun" data-testid="rerun">
      <header>
        rerun <a className="mono" href={href.run(r.runId)}>{r.runId}</a> of step <a href={href.step(runId, r.step)}>{r.step}</a>{' '}
        {c ? <Chip kind={c.ok ? 'ok' : 'bad'}>{c.ok ? 'reproduced' : `${c.deterministicDifferences} differences`}</Chip> : <Chip kind="bad">not comparable</Chip>}
      </header>
      {r.error && <div className="error">{r.error}</div>}
      {c && (
        <table className="plain compact">
          <thead><tr><th className="num">prompt</th><th className="num">sample</th><th>reward (original → rerun)</th><th>answer (original → rerun)</th><th>tool calls</th><th>response</th></tr></thead>
          <tbody>
            {c.rollouts.map((x) => (
              <tr key={x.originalRolloutId} className={x.differences.length ? 'row-bad' : x.timingDependent.length ? 'row-warn' : ''}>
                <td className="num">{x.promptIdx}</td>
                <td className="num"><a href={href.rollout(runId, x.originalRolloutId)}>{x.sampleIdx}</a></td>
                <td className={x.rewardSame ? '' : 'hl-new'}>{String(x.original.reward)} → {String(x.rerun?.reward ?? '-')}</td>
                <td className={x.answerSame ? '' : 'hl-new'}><code>{x.original.answer ?? '-'}</code> → <code>{x.rerun?.answer ?? '-'}</code></td>
                <td>{x.calls.length ? x.calls.map((k) => k.cause ?? 'same').join(' ') : '-'}</td>
                <td className={x.responseSame ? '' : 'hl-new'}>{x.responseSame ? 'same' : 'differs'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <details>
        <summary>as `rstar replay rerun` prints it</summary>
        <pre className="io">{r.lines.join('\n')}</pre>
      </details>
    </article>
  );
}

/** The replay page: `rstar replay verify` (without re-execution) with each difference next to the original, and the recorded reruns. */
export function ReplayPage({ runId, step }: { runId: string; step: number | null }) {
  const view = useLoad(() => api.replay(runId, step ?? undefined), [runId, step]);
  const [pick, setPick] = useState(step === null ? '' : String(step));
  const needsStep = view.error instanceof ApiError && view.error.field === 'step';
  const d = view.data;
  const v = d?.verify;
  const n = v?.report.differences.length ?? 0;
  return (
    <main>
      <RunNav runId={runId} current="replay" />
      <form
        className="step-pick"
        onSubmit={(e) => {
          e.preventDefault();
          window.location.hash = href.replay(runId, pick === '' ? null : Number(pick));
        }}
      >
        <label>verify step <input type="number" min={0} value={pick} onChange={(e) => setPick(e.target.value)} placeholder="all" aria-label="step to verify (empty: every step)" /></label>
        <button className="filter" type="submit">verify</button>
        <span className="muted">Re-grades every answer, re-decides every GRPO-RoC group and rebuilds every batch with today&apos;s code, as <code>rstar replay verify {runId} --no-exec</code>{step !== null ? ` --step ${step}` : ''}; tool calls are not re-executed here.</span>
      </form>
      <Loading error={needsStep ? null : view.error} loading={view.loading}>
        {needsStep && <div className="note" role="status">{view.error!.message}</div>}
        {d && v && (
          <>
            <div className="summary">
              <Stat label="verdict" value={<Chip kind={v.report.ok && v.chain.ok ? 'ok' : 'bad'}>{v.report.ok && v.chain.ok ? 'OK' : 'FAILED'}</Chip>} testId="verdict" />
              <Stat label="deterministic differences" value={v.report.deterministicDifferences} testId="deterministic" />
              <Stat label="timing-dependent" value={n - v.report.deterministicDifferences} />
              <Stat label="steps" value={v.report.steps.join(', ') || '-'} />
              <Stat label="checked" value={`${v.report.checked.rewards} rewards · ${v.report.checked.groups} groups · ${v.report.checked.batches} batches`} />
            </div>
            <Section title={`Differences (${n})`} testId="differences">
              {n === 0 && <p className="muted">No difference: every recorded decision is what today&apos;s code decides.</p>}
              {v.report.differences.map((diff, i) => <DifferenceCard key={i} d={diff} line={v.lines[i]} runId={runId} />)}
              <div className="verify-tail mono">
                {v.lines.slice(n).map((l, i) => <div key={i} data-testid="verify-line">{l}</div>)}
              </div>
            </Section>
            <Section title={`Reruns (${d.reruns.length})`} testId="reruns">
              {d.reruns.length === 0 && <p className="muted">No step of this run was re-run (<code>rstar replay rerun {runId} --step N</code>).</p>}
              {d.reruns.map((r) => <Rerun key={r.runId} r={r} runId={runId} />)}
            </Section>
          </>
        )}
      </Loading>
    </main>
  );
}
