import { useEffect } from 'react';
import { api, followRunsLive, type RunListItem } from '../api';
import { Chip, Loading, LiveDot } from '../components/bits';
import { VirtualTable, type Column } from '../components/virtual-table';
import { fmt } from '../format';
import { useLoad } from '../hooks';
import { href } from '../router';

const columns: Column<RunListItem>[] = [
  { header: 'run', width: 'minmax(220px, 2fr)', cell: (r) => <a href={href.run(r.runId)} className="mono" tabIndex={-1}>{r.runId}</a> },
  { header: 'status', width: '110px', cell: (r) => <><Chip kind={r.status}>{r.status}</Chip> <LiveDot on={r.status === 'running'} /></> },
  { header: 'preset', width: '120px', cell: (r) => r.preset ?? '-' },
  { header: 'stage', width: '110px', cell: (r) => r.stage ?? '-' },
  {
    header: 'step', width: '170px', title: 'latest step (0-based, as in metrics.csv) and steps completed', cell: (r) => (
      <span className="progress-cell">
        <span>{r.step ?? '-'}</span>
        {r.totalSteps ? <><progress max={r.totalSteps} value={r.stepsCompleted} aria-label="steps completed" /><span className="muted">{r.stepsCompleted}/{r.totalSteps}</span></> : null}
      </span>
    ),
  },
  { header: 'reward', width: '80px', align: 'right', title: 'mean reward of the last completed step', cell: (r) => fmt.num(r.lastReward) },
  { header: 'pass rate', width: '90px', align: 'right', title: 'pass rate of the last completed step', cell: (r) => fmt.pct(r.lastPassRate) },
  { header: 'mode', width: '100px', cell: (r) => r.mode ?? '-' },
  { header: 'started', width: '160px', cell: (r) => fmt.time(r.startedAt) },
  { header: 'finished', width: '160px', cell: (r) => fmt.time(r.finishedAt) },
];

/** Every run, newest first, kept current by the runs feed. */
export function RunsPage() {
  const runs = useLoad(() => api.runs().then((r) => r.runs), []);
  const { setData } = runs;
  useEffect(() => followRunsLive((list) => setData(() => list)), [setData]);
  const list = runs.data ?? [];
  return (
    <main>
      <h1>Runs</h1>
      <Loading error={runs.error} loading={runs.loading}>
        {list.length === 0 ? (
          <p className="muted">No run archived yet. Start one with <code>pnpm rstar train --remote</code>.</p>
        ) : (
          <VirtualTable
            label="runs"
            testId="runs-table"
            columns={columns}
            rowCount={list.length}
            row={(i) => list[i]}
            rowKey={(r, i) => r?.runId ?? String(i)}
            onOpen={(r) => (window.location.hash = href.run(r.runId))}
            height="calc(100vh - 160px)"
            rowHeight={34}
          />
        )}
      </Loading>
    </main>
  );
}
