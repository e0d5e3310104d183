import { NotInRunError } from './errors';
import type { RolloutRecord, RunIndex } from './run.index';
import { textTable } from './replay.formatter';
import { classifyToolOutputDiff, type ToolDiffCause, type ToolOutput } from './tool-output.classifier';

/** One tool call of a rollout in the original run and in its rerun, matched by position (turn order). */
export interface RerunCallComparison {
  /** Position of the call in the rollout (0-based, recorded order). */
  index: number;
  code: string | null;
  original: ToolOutput | null;
  rerun: ToolOutput | null;
  /** Null when both outputs are equal; `missing` when one side has no completed call. */
  cause: ToolDiffCause | 'missing' | null;
  deterministic: boolean;
}

/** What one rollout ended with: its reward and the final answer the grader extracted. */
export interface RerunOutcome {
  reward: number | null;
  correct: boolean | null;
  answer: string | null;
  responseText: string | null;
}

/** One rollout of the step (matched by prompt and sample index) in the original run and the rerun. */
export interface RerunRolloutComparison {
  promptIdx: number;
  sampleIdx: number;
  originalRolloutId: string;
  rerunRolloutId: string | null;
  original: RerunOutcome;
  rerun: RerunOutcome | null;
  rewardSame: boolean;
  answerSame: boolean;
  responseSame: boolean;
  calls: RerunCallComparison[];
  /** Deterministic differences of this rollout, one readable line each (empty = reproduced). */
  differences: string[];
  /** Differences explained by a timing-dependent tool output (reported, not failing). */
  timingDependent: string[];
}

/** A rerun of a recorded step compared with the original, rollout by rollout. */
export interface RerunComparison {
  originalRunId: string;
  rerunRunId: string;
  step: number;
  rollouts: RerunRolloutComparison[];
  /** Groups whose equal-reward drop or RoC penalties differ, one line each (deterministic). */
  groupDifferences: string[];
  /** Groups whose RoC draw (kept sample indices) differs: expected, the draw is seeded by the new group id. */
  groupNotes: string[];
  /** Rollouts reproduced exactly (no difference at all). */
  reproduced: number;
  /** Rollouts that differ only after a timing-dependent observation (not failing). */
  timingDependent: number;
  deterministicDifferences: number;
  /** True when no deterministic outcome differs. */
  ok: boolean;
}

const outcome = (r: RolloutRecord | undefined): RerunOutcome | null =>
  r ? { reward: r.reward?.reward ?? null, correct: r.reward?.correct ?? null, answer: r.reward?.extracted ?? null, responseText: r.completed?.responseText ?? null } : null;

const output = (c: RolloutRecord['calls'][number]): ToolOutput | null =>
  c.completed ? { status: c.completed.status, stdout: c.completed.stdout, stderr: c.completed.stderr, truncated: c.completed.truncated } : null;

const key = (r: RolloutRecord) => `${r.promptIdx}:${r.sampleIdx}`;

/**
 * Whether two runs of a rollout first differ at a token the model did not write (loss mask 0: a tool
 * response). Such a token comes from the environment; with equal tool outputs it is the response's
 * execution-time line (rStar2's tool response format), which depends on timing.
 */
function divergesAtObservation(a: RolloutRecord, b: RolloutRecord): boolean {
  const x = a.completed;
  const y = b.completed;
  if (!x || !y) return false;
  const n = Math.min(x.responseTokenIds.length, y.responseTokenIds.length);
  let i = 0;
  while (i < n && x.responseTokenIds[i] === y.responseTokenIds[i]) i++;
  return i < n && x.lossMask[i] === 0 && y.lossMask[i] === 0;
}

function compareRollout(a: RolloutRecord, b: RolloutRecord | undefined): RerunRolloutComparison {
  const o = outcome(a)!;
  const n = outcome(b);
  const calls: RerunCallComparison[] = [];
  for (let i = 0; i < Math.max(a.calls.length, b?.calls.length ?? 0); i++) {
    const ca = a.calls[i];
    const cb = b?.calls[i];
    const oa = ca ? output(ca) : null;
    const ob = cb ? output(cb) : null;
    const code = ca?.requested?.code ?? cb?.requested?.code ?? null;
    if (!oa || !ob) {
      calls.push({ index: i, code, original: oa, rerun: ob, cause: oa || ob ? 'missing' : null, deterministic: !!(oa || ob) });
      continue;
    }
    const sameCode = ca?.requested?.code === cb?.requested?.code;
    const d = sameCode ? classifyToolOutputDiff(code ?? '', oa, ob) : null;
    calls.push({ index: i, code, original: oa, rerun: ob, cause: sameCode ? (d?.cause ?? null) : 'real_change', deterministic: sameCode ? (d?.deterministic ?? false) : true });
  }
  const row: RerunRolloutComparison = {
    promptIdx: a.promptIdx, sampleIdx: a.sampleIdx, originalRolloutId: a.rolloutId, rerunRolloutId: b?.rolloutId ?? null, original: o, rerun: n,
    rewardSame: !!n && n.reward === o.reward && n.correct === o.correct,
    answerSame: !!n && n.answer === o.answer,
    responseSame: !!n && n.responseText === o.responseText,
    calls, differences: [], timingDependent: [],
  };
  if (!b || !n) {
    row.differences.push('not re-run (no rollout with this prompt and sample index in the rerun)');
    return row;
  }
  // Other weights sample other tokens: an async step's rerun must serve each rollout its original version.
  const [va, vb] = [a.completed?.policyVersion, b.completed?.policyVersion];
  if (va !== undefined && vb !== undefined && va !== vb) row.differences.push(`sampled on policy version ${va} in the original, ${vb} in the rerun`);
  // What the rollout did after a timing-dependent observation may differ legitimately: a tool output that
  // depends on timing, or the tool response the model read (it carries the call's execution time).
  const detCall = calls.findIndex((c) => c.cause !== null && c.deterministic);
  const timingCall = calls.findIndex((c) => c.cause === 'timing_dependent');
  let timing: string | null = null;
  if (timingCall >= 0 && (detCall < 0 || timingCall < detCall)) timing = `after timing-dependent tool call #${timingCall}`;
  else if (detCall < 0 && divergesAtObservation(a, b)) timing = 'the tool response the model read differs first, in its execution-time line';
  calls.forEach((c, i) => {
    if (!c.cause) return;
    const line = `tool call #${i}: ${c.cause === 'missing' ? `only in the ${c.original ? 'original' : 'rerun'}` : `output differs (${c.cause})`}`;
    if (timing) row.timingDependent.push(`${line} (${timing})`);
    else (c.deterministic ? row.differences : row.timingDependent).push(line);
  });
  const sink = timing ? row.timingDependent : row.differences;
  const why = timing ? ` (${timing})` : '';
  if (!row.responseSame) sink.push(`response text differs${why}`);
  if (!row.answerSame) sink.push(`final answer ${JSON.stringify(o.answer)} -> ${JSON.stringify(n.answer)}${why}`);
  if (!row.rewardSame) sink.push(`reward ${o.reward} -> ${n.reward}${why}`);
  return row;
}

/**
 * Compare a rerun of a recorded step (`rstar replay rerun`, see `rerunStep`) with the original, rollout
 * by rollout, matched by (prompt index, sample index): the policy version that sampled it, reward, final answer (the grader's extraction),
 * response text, each tool call's output (classified by {@link classifyToolOutputDiff}), and each
 * group's equal-reward drop and RoC penalties (its kept samples are only noted: the RoC draw is seeded
 * by `seedOf(runSeed, step, groupId)` and the rerun's group ids are new). With the engine's
 * per-request sampling seeds, the same weights and the same observations, a rollout is reproduced
 * token for token, so every difference is deterministic except those after a timing-dependent
 * observation, which are reported apart: a timing-dependent tool output (a timeout, a clock read), or a
 * first divergence inside a tool response whose outputs are equal (its execution-time line).
 * Throws {@link NotInRunError} when `step` is not in the original.
 */
export function compareRerun(original: RunIndex, rerun: RunIndex, step: number): RerunComparison {
  const s = original.steps.find((x) => x.step === step);
  if (!s) throw new NotInRunError('step', step, original.runId, original.steps.map((x) => x.step));
  const originals = s.groupIds.flatMap((g) => original.groups.get(g)!.rolloutIds).map((id) => original.rollouts.get(id)!).filter((r) => r.requested);
  const reruns = new Map([...rerun.rollouts.values()].filter((r) => r.step === step).map((r) => [key(r), r]));
  const rollouts = originals.map((r) => compareRollout(r, reruns.get(key(r))));
  const timingRollouts = new Set(rollouts.filter((r) => r.timingDependent.length > 0).map((r) => r.promptIdx));
  const groupDifferences: string[] = [];
  const groupNotes: string[] = [];
  const rerunGroups = new Map([...rerun.groups.values()].filter((g) => g.step === step).map((g) => [g.promptIdx, g]));
  const sample = (ix: RunIndex, id: string) => ix.rollouts.get(id)?.sampleIdx ?? -1;
  for (const gid of s.groupIds) {
    const g = original.groups.get(gid)!;
    const a = g.resampled;
    if (!a || timingRollouts.has(g.promptIdx)) continue;
    const b = rerunGroups.get(g.promptIdx)?.resampled;
    if (!b) {
      groupDifferences.push(`group ${g.promptIdx}: no GroupResampled in the rerun`);
      continue;
    }
    // A group decision changes when a member's reward does: name the rollouts whose differences it follows.
    const differing = rollouts.filter((r) => r.promptIdx === g.promptIdx && r.differences.length > 0).map((r) => `(${r.originalRolloutId})`);
    const cause = differing.length ? `, following the differences of ${differing.join(', ')}` : '';
    if (a.groupDropped !== b.groupDropped) groupDifferences.push(`group ${g.promptIdx}: dropped ${a.groupDropped ?? 'no'} -> ${b.groupDropped ?? 'no'}${cause}`);
    const pen = (ix: RunIndex, ps: typeof a.penalties) => ps.map((p) => `${sample(ix, p.rolloutId)}:${p.pErr}:${p.pFormat}`).sort().join(' ');
    if (pen(original, a.penalties) !== pen(rerun, b.penalties)) groupDifferences.push(`group ${g.promptIdx}: RoC penalties (sample:pErr:pFormat) [${pen(original, a.penalties)}] -> [${pen(rerun, b.penalties)}]${cause}`);
    const kept = (ix: RunIndex, ids: readonly string[]) => ids.map((id) => sample(ix, id)).sort((x, y) => x - y).join(',');
    if (kept(original, a.kept) !== kept(rerun, b.kept)) groupNotes.push(`group ${g.promptIdx}: kept samples [${kept(original, a.kept)}] -> [${kept(rerun, b.kept)}] (the RoC draw is seeded by the group id, which is new in a rerun)`);
  }
  const deterministicDifferences = rollouts.reduce((n, r) => n + r.differences.length, 0) + groupDifferences.length;
  return {
    originalRunId: original.runId, rerunRunId: rerun.runId, step, rollouts, groupDifferences, groupNotes,
    reproduced: rollouts.filter((r) => r.differences.length === 0 && r.timingDependent.length === 0).length,
    timingDependent: rollouts.filter((r) => r.differences.length === 0 && r.timingDependent.length > 0).length,
    deterministicDifferences, ok: deterministicDifferences === 0,
  };
}

const cell = (v: string | number | boolean | null): string => (v === null ? '-' : String(v));
const clip = (s: string | null, n = 16): string => (s === null ? '-' : s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The comparison as text: one row per rollout, then each difference, then the verdict line. */
export function formatRerunComparison(c: RerunComparison): string {
  const table = textTable(c.rollouts, [
    ['prompt', (r) => cell(r.promptIdx)],
    ['sample', (r) => cell(r.sampleIdx)],
    ['reward', (r) => `${cell(r.original.reward)} -> ${cell(r.rerun?.reward ?? null)}`],
    ['same', (r) => (r.rewardSame ? 'yes' : 'NO')],
    ['answer', (r) => `${clip(r.original.answer)} -> ${clip(r.rerun?.answer ?? null)}`],
    ['same', (r) => (r.answerSame ? 'yes' : 'NO')],
    ['tool calls', (r) => (r.calls.length === 0 ? '-' : r.calls.map((x) => (x.cause === null ? 'same' : x.cause)).join(' '))],
    ['response', (r) => (r.responseSame ? 'same' : 'differs')],
  ]);
  const lines = [`rerun ${c.rerunRunId} of run ${c.originalRunId} step ${c.step}: ${c.rollouts.length} rollouts`, '', table, ''];
  for (const r of c.rollouts) {
    for (const d of r.differences) lines.push(`DIFF prompt ${r.promptIdx} sample ${r.sampleIdx} (${r.originalRolloutId}): ${d}`);
    for (const d of r.timingDependent) lines.push(`timing-dependent prompt ${r.promptIdx} sample ${r.sampleIdx} (${r.originalRolloutId}): ${d}`);
  }
  for (const d of c.groupDifferences) lines.push(`DIFF ${d}`);
  for (const d of c.groupNotes) lines.push(`note: ${d}`);
  const tally = `${c.reproduced}/${c.rollouts.length} rollouts reproduced exactly, ${c.timingDependent} diverged only after a timing-dependent observation`;
  lines.push(c.ok ? `OK: ${tally}; no deterministic difference` : `FAILED: ${c.deterministicDifferences} deterministic differences (${tally})`);
  return lines.join('\n');
}
