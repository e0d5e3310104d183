import { useEffect, useMemo, useState } from 'react';
import type { GroupRow } from '@rstar/run-views';
import { api, followRunLive, type RolloutBrief, type StepDetailView } from '../api';
import { Chip, Loading, Stat } from '../components/bits';
import { RunNav, Section } from '../components/run-nav';
import { VirtualTable, type Column } from '../components/virtual-table';
import { fmt } from '../format';
import { useLoad, useThrottled } from '../hooks';
import { href } from '../router';

/** The step page's outcome filters. */
export const OUTCOMES: Array<[string, string, (r: RolloutBrief) => boolean]> = [
  ['all', 'all', () => true],
  ['correct', 'correct', (r) => r.correct === true],
  ['wrong', 'wrong', (r) => r.correct === false],
  ['kept', 'kept by RoC', (r) => r.status === 'kept'],
  ['dropped', 'dropped by RoC', (r) => r.status === 'dropped'],
  ['tool-error', 'with tool errors', (r) => (r.toolErrors ?? 0) > 0],
  ['truncated', 'truncated', (r) => r.truncated === true],
];

/** The step page: its metrics, its groups (rewards, RoC penalties, kept/dropped, advantages), its rollouts by outcome. */
export function StepPage({ runId, step }: { runId: string; step: number }) {
  const view = useLoad(() => api.step(runId, step), [runId, step]);
  const { reload } = view;
  const refresh = useThrottled(reload, 1000);
  const running = view.data !== null && view.data.step.status !== 'completed';
  useEffect(() => {
    if (!running) return;
    // While the step runs, refresh on each update that touches it.
    return followRunLive(runId, null, (u) => {
      if (u.rollouts.some((r) => r.step === step) || u.steps.some((s) => s.step === step)) refresh();
    });
  }, [runId, step, running, refresh]);
  const [outcome, setOutcome] = useState('all');
  const d = view.data;
  return (
    <main>
      <RunNav runId={runId} current={null} crumbs={[['Steps', href.run(runId, 'steps')], [`step ${step}`, null]]} />
      <Loading error={view.error} loading={view.loading}>
        {d && (
          <>
            <StepSummary d={d} runId={runId} />
            <GroupTable groups={d.groups} runId={runId} prompts={d.step.prompts} />
            <RolloutsOfStep d={d} runId={runId} outcome={outcome} setOutcome={setOutcome} />
          </>
        )}
      </Loading>
    </main>
  );
}

function StepSummary({ d, runId }: { d: StepDetailView; runId: string }) {
  const s = d.step;
  return (
    <div className="summary" data-testid="step-summary">
      <Stat label="step" value={<>{s.step} {s.step > 0 && <a href={href.step(runId, s.step - 1)} aria-label="previous step">‹</a>} <a href={href.step(runId, s.step + 1)} aria-label="next step">›</a></>} />
      <Stat label="stage" value={s.stage ?? '-'} />
      <Stat label="status" value={<Chip kind={s.status}>{s.status}</Chip>} testId="step-status" />
      <Stat label="policy" value={s.policyVersion === null ? '-' : `v${s.policyVersion} → ${s.newPolicyVersion === null ? '-' : `v${s.newPolicyVersion}`}`} />
      <Stat label="rollouts" value={`${s.rolloutsCompleted}/${s.rolloutsRequested}`} testId="step-rollouts" />
      <Stat label="reward" value={fmt.num(s.rewardMean)} testId="step-reward" />
      <Stat label="groups kept / all equal / timed out" value={`${s.groupsKept} / ${s.groupsAllEqual} / ${s.groupsTimedOut}`} testId="step-groups" />
      <Stat label="tool errors" value={`${s.toolErrors}/${s.toolCalls}`} />
      <Stat label="loss · clip" value={`${fmt.num(s.loss, 4)} · ${fmt.num(s.clipFraction)}`} />
      <Stat label="advantage mean ± std" value={`${fmt.num(s.advantageMean, 4)} ± ${fmt.num(s.advantageStd, 4)}`} />
      <Stat label="batch" value={<span className="mono" title={s.batchHash ?? ''}>{s.batchHash ? s.batchHash.slice(0, 12) : '-'}</span>} />
      <Stat label="replay" value={<a href={href.replay(runId, s.step)}>verify this step</a>} />
    </div>
  );
}

/** The step's groups; those past the step's `prompts` first ones are dynamic sampling's extra groups. */
function GroupTable({ groups, runId, prompts }: { groups: GroupRow[]; runId: string; prompts: number }) {
  return (
    <Section title={`Groups (${groups.length})`} testId="groups">
      <div className="groups">
        {groups.map((g) => (
          <article key={g.groupId} className="group-card" data-testid="group" aria-label={`group ${g.promptIdx}`}>
            <header>
              <span className="mono">prompt {g.promptIdx}</span> <span className="muted">{g.promptId}</span>{' '}
              {g.pending ? <Chip kind="pending">pending</Chip> : g.groupDropped ? <Chip kind="dropped">dropped: {g.groupDropped}</Chip> : <Chip kind="kept">kept {g.kept}</Chip>}{' '}
              {g.promptIdx >= prompts && <Chip kind="extra" title="asked for by dynamic sampling (roc.maxExtraGroups) to replace an all-equal group">extra group</Chip>}{' '}
              <span className="muted">positives {g.positives}/{g.members.length} · {g.mode ?? '-'}{g.received !== null ? ` · received ${g.received}/${g.expected}` : ''}</span>
            </header>
            {g.timeout && <p className="timeout-reason" data-testid="group-timeout">timed out: {g.timeout.reason}</p>}
            <table className="plain compact">
              <thead><tr><th className="num">sample</th><th className="num">reward</th><th className="num" title="RoC tool-error penalty">p_err</th><th className="num" title="RoC format penalty">p_format</th><th>RoC</th><th className="num">advantage</th></tr></thead>
              <tbody>
                {g.members.map((m) => (
                  <tr key={m.rolloutId} className={m.status}>
                    <td className="num"><a href={href.rollout(runId, m.rolloutId)}>{m.sampleIdx}</a></td>
                    <td className="num">{fmt.num(m.reward)}</td>
                    <td className="num">{fmt.num(m.pErr)}</td>
                    <td className="num">{fmt.num(m.pFormat)}</td>
                    <td><Chip kind={m.status}>{m.status}</Chip></td>
                    <td className="num">{fmt.num(m.advantage, 4)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </article>
        ))}
      </div>
    </Section>
  );
}

/**
 * One rollout's policy versions (docs/design/protocol.md §8, §10): the versions that sampled it, the
 * trainer's version when its step trained and the staleness; a partial rollout (several versions) and a
 * stale discard are marked. `data-testid="rollout-versions"` on every row, `data-rollout-id` naming it.
 */
export function RolloutVersions({ r }: { r: RolloutBrief }) {
  const partial = (r.policyVersions?.length ?? 0) > 1;
  return (
    <span data-testid="rollout-versions" data-rollout-id={r.rolloutId} data-partial={partial ? 'true' : undefined}>
      {fmt.versions(r)}
      {partial && <> <Chip kind="partial" title="sampled under several policy versions: a weight update reached it mid-rollout (partial rollouts)">partial</Chip></>}
      {r.discarded && <> <Chip kind="dropped" title="left out of the step's batch as older than the staleness bound">stale</Chip></>}
    </span>
  );
}

function RolloutsOfStep({ d, runId, outcome, setOutcome }: { d: StepDetailView; runId: string; outcome: string; setOutcome: (o: string) => void }) {
  const pick = OUTCOMES.find((o) => o[0] === outcome)![2];
  const rows = useMemo(() => d.rollouts.filter(pick), [d.rollouts, pick]);
  const cols: Column<RolloutBrief>[] = useMemo(() => [
    { header: 'rollout', width: 'minmax(240px, 2fr)', cell: (r) => <a href={href.rollout(runId, r.rolloutId)} className="mono" tabIndex={-1}>{r.rolloutId}</a> },
    { header: 'prompt', width: '64px', align: 'right', cell: (r) => r.promptIdx },
    { header: 'sample', width: '64px', align: 'right', cell: (r) => r.sampleIdx },
    { header: 'reward', width: '70px', align: 'right', cell: (r) => <Chip kind={r.correct ? 'ok' : 'bad'}>{fmt.num(r.reward)}</Chip> },
    { header: 'rule', width: '110px', cell: (r) => r.rule ?? '-' },
    { header: 'tool calls', width: '90px', align: 'right', cell: (r) => (r.toolCalls === null ? '-' : `${r.toolCalls}${r.toolErrors ? ` (${r.toolErrors} err)` : ''}`) },
    { header: 'tokens', width: '70px', align: 'right', cell: (r) => fmt.num(r.responseTokens) },
    { header: 'finish', width: '100px', cell: (r) => `${r.finishReason ?? '-'}${r.truncated ? ' ✂' : ''}` },
    { header: 'policy versions · staleness', width: 'minmax(260px, 1.5fr)', cell: (r) => <RolloutVersions r={r} /> },
    { header: 'RoC', width: '80px', cell: (r) => <Chip kind={r.status}>{r.status}</Chip> },
  ], [runId]);
  return (
    <Section
      title={`Rollouts (${rows.length} of ${d.rollouts.length})`}
      testId="step-rollouts"
      aside={
        <div className="filters" role="group" aria-label="filter by outcome">
          {OUTCOMES.map(([key, label, f]) => (
            <button key={key} className={key === outcome ? 'filter active' : 'filter'} aria-pressed={key === outcome} onClick={() => setOutcome(key)}>
              {label} <span className="muted">{d.rollouts.filter(f).length}</span>
            </button>
          ))}
        </div>
      }
    >
      <VirtualTable
        label="rollouts of the step"
        testId="step-rollout-table"
        columns={cols}
        rowCount={rows.length}
        row={(i) => rows[i]}
        rowKey={(r, i) => r?.rolloutId ?? String(i)}
        onOpen={(r) => (window.location.hash = href.rollout(runId, r.rolloutId))}
        rowClass={(r) => (r.correct ? 'row-ok' : '')}
      />
    </Section>
  );
}
