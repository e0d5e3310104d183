import type { GroupMemberRow, GroupRow } from './group-table.projection';
import { formatRolloutVersions, type RolloutVersions } from './rollout-versions.projection';
import type { RolloutTranscript } from './rollout-transcript.projection';
import type { RunSummaryView } from './run-summary.projection';
import type { StepRow } from './step-table.projection';
import type { VerifyReport } from './run.verifier';

const num = (v: number | null | undefined, digits = 3): string => (v === null || v === undefined ? '-' : Number.isInteger(v) ? String(v) : v.toFixed(digits));

/** Render rows as an aligned text table; `cols` are [header, cell] pairs. */
export function textTable<T>(rows: readonly T[], cols: ReadonlyArray<[string, (r: T) => string]>): string {
  const cells = rows.map((r) => cols.map(([, f]) => f(r)));
  const widths = cols.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  return [line(cols.map(([h]) => h)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** The run summary as text. */
export function formatRunSummary(s: RunSummaryView): string {
  return [
    `run ${s.runId}  status=${s.status}  mode=${s.mode ?? '-'}  seed=${s.seed ?? '-'}  code=${s.codeVersion ?? '-'}${s.preset ? `  preset=${s.preset}` : ''}`,
    s.rerunOf ? `rerun of ${s.rerunOf.runId} step ${s.rerunOf.step}` : '',
    s.resumedFrom ? `resumed from ${s.resumedFrom}` : '',
    `steps ${s.stepsCompleted}/${s.stepsStarted} completed  rollouts ${s.rolloutsCompleted}/${s.rollouts}  tool calls executed ${s.toolCalls}  reward mean ${num(s.rewardMean)}  policy v${s.policyVersion}`,
    s.error ? `error: ${s.error}` : '',
    `events ${s.events}: ${Object.entries(s.eventsByType).map(([k, v]) => `${k}=${v}`).join(' ')}`,
  ].filter(Boolean).join('\n');
}

/** The step table as text. */
export function formatStepTable(rows: readonly StepRow[]): string {
  return textTable(rows, [
    ['step', (r) => String(r.step)], ['stage', (r) => r.stage ?? '-'], ['status', (r) => r.status], ['policy', (r) => num(r.policyVersion)],
    ['rollouts', (r) => `${r.rolloutsCompleted}/${r.rolloutsRequested}`], ['reward', (r) => num(r.rewardMean)],
    ['groups kept/equal/timeout', (r) => `${r.groupsKept}/${r.groupsAllEqual}/${r.groupsTimedOut}`],
    ['tool err', (r) => `${r.toolErrors}/${r.toolCalls}`], ['len', (r) => num(r.meanResponseTokens, 0)], ['trunc', (r) => String(r.truncated)],
    ['loss', (r) => num(r.loss, 4)], ['clip', (r) => num(r.clipFraction)], ['batch', (r) => (r.batchHash ? r.batchHash.slice(0, 12) : '-')],
  ]);
}

/**
 * The group table as text: one block per group, one line per rollout. With `versions` (by rollout id,
 * e.g. {@link stepRolloutVersions}) each line also shows the rollout's policy versions as the dashboard's
 * step page does (`v3→v4 · trained at v4 · staleness 1`, `partial` when several versions sampled it).
 */
export function formatGroupTable(rows: readonly GroupRow[], versions?: ReadonlyMap<string, RolloutVersions>): string {
  const policy: Array<[string, (m: GroupMemberRow) => string]> = versions
    ? [['policy versions · staleness', (m) => {
        const v = versions.get(m.rolloutId);
        return v ? `${formatRolloutVersions(v)}${v.partial ? ' · partial' : ''}` : '-';
      }]]
    : [];
  return rows
    .map((g) => {
      const head = `${g.groupId}  prompt ${g.promptId ?? '-'}  ${g.pending ? 'PENDING' : g.groupDropped ? `DROPPED (${g.groupDropped})` : `kept ${g.kept}`}  positives ${g.positives}/${g.members.length}  mode ${g.mode ?? '-'}  seed ${g.seed || '-'}` +
        (g.timeout ? `\ntimeout: ${g.timeout.reason}` : '');
      const body = textTable(g.members, [
        ['rollout', (m) => m.rolloutId], ['sample', (m) => String(m.sampleIdx)], ['reward', (m) => num(m.reward)],
        ['p_err', (m) => num(m.pErr)], ['p_format', (m) => num(m.pFormat)], ['status', (m) => m.status], ['advantage', (m) => num(m.advantage, 4)],
        ...policy,
      ]);
      return `${head}\n${body}`;
    })
    .join('\n\n');
}

/**
 * The timed-out groups of a run as text, one line each with the reason its `GroupResampled` recorded (or
 * that the run predates recorded reasons); empty when no group timed out.
 */
export function formatTimeouts(rows: readonly GroupRow[]): string {
  const t = rows.filter((g) => g.groupDropped === 'timeout');
  if (!t.length) return '';
  return [`timed-out groups (${t.length}):`, ...t.map((g) => `  step ${g.step}  ${g.groupId}: ${g.timeout?.reason ?? 'timed out (no reason recorded: a run recorded before GroupResampled.timeout)'}`)].join('\n');
}

/** A rollout transcript as text: each turn, its tool calls with code and output, then the reward and why. */
export function formatTranscript(t: RolloutTranscript): string {
  const out = [
    `=== ${t.rolloutId}  group ${t.groupId}  step ${t.step}  prompt ${t.promptId ?? '-'}  policy v${t.policyVersion ?? '-'}  engine ${t.engineId ?? '-'}`,
    `problem: ${t.problem ?? '(not recorded)'}`,
    `gold: ${t.gold ?? '-'}  sampling: ${t.sampling ? `T=${t.sampling.temperature} top_p=${t.sampling.topP} seed=${t.sampling.seed}` : '-'}`,
  ];
  for (const turn of t.turns) {
    out.push(`--- turn ${turn.turn} (${turn.tokens} tokens, ${turn.finishReason})`, turn.text);
    for (const c of turn.toolCalls) {
      out.push(`    [tool ${c.callId}] ${c.tool ?? '-'} -> ${c.status ?? '(no result)'}${c.wallMs !== null ? ` in ${num(c.wallMs, 1)} ms` : ''}${c.truncated ? ' TRUNCATED' : ''}`);
      out.push(...(c.code ?? '').split('\n').map((l) => `    | ${l}`));
      if (c.input) out.push(`    stdin: ${JSON.stringify(c.input)}`);
      if (c.stdout) out.push(...c.stdout.trimEnd().split('\n').map((l) => `    > ${l}`));
      if (c.stderr) out.push(...c.stderr.trimEnd().split('\n').map((l) => `    ! ${l}`));
    }
  }
  const c = t.counters;
  out.push(`--- finish ${t.finishReason ?? '-'}${t.truncated ? ' TRUNCATED' : ''}  tokens ${t.responseTokens ?? '-'} (${t.modelTokens ?? '-'} model)` +
    (c ? `  turns ${c.turns}  tool calls ${c.toolCalls} (${c.toolErrors} errors)  answers ${c.answerBlocks}  format violations ${c.formatViolations}` : ''));
  const w = t.reward;
  out.push(w ? `reward ${w.reward} (${w.correct ? 'correct' : 'wrong'})  rule ${w.rule}  extracted ${JSON.stringify(w.extracted)}  normalized ${JSON.stringify(w.normalizedPrediction)} vs gold ${JSON.stringify(w.normalizedGold)}` : 'reward: (not graded)');
  const r = t.resample;
  if (r) out.push(`resample: ${r.status}${r.groupDropped ? ` (group dropped: ${r.groupDropped})` : ''}  p_err ${num(r.pErr)}  p_format ${num(r.pFormat)}`);
  return out.join('\n');
}

/** A verify report as text: one line per difference, then the totals. */
export function formatVerifyReport(r: VerifyReport): string {
  const lines = r.differences.map((d) => `${d.deterministic ? 'DIFF' : 'note'} [${d.kind}/${d.cause}] ${d.message}`);
  const c = r.checked;
  const s = r.skipped;
  lines.push(
    `run ${r.runId} steps [${r.steps.join(', ')}]: checked ${c.rewards} rewards, ${c.groups} groups, ${c.batches} batches, ${c.toolCalls} tool calls, ${c.checkpoints} checkpoints` +
      ` (skipped ${s.rewards} rewards, ${s.groups} groups, ${s.toolCalls} tool calls, ${s.checkpoints} checkpoints)`,
    ...r.staleness.map((st) => {
      const max = Math.max(0, ...st.entered.map((e) => e.staleness));
      return `step ${st.step}: ${st.entered.length} rollouts entered at trainer version ${st.trainPolicyVersion} (staleness max ${max}, η ${st.maxStaleness}), ${st.discarded.length} discarded as stale`;
    }),
    ...r.notes.map((n) => `note: ${n}`),
    r.ok ? `OK: no deterministic difference (${r.differences.length} timing-dependent)` : `FAILED: ${r.deterministicDifferences} deterministic differences`,
  );
  return lines.join('\n');
}
