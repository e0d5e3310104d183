import type { RunIndex } from './run.index';
import { NotInRunError } from './errors';

/** One tool call in a transcript: the code the model wrote and what the sandbox answered. */
export interface TranscriptToolCall {
  callId: string;
  tool: string | null;
  code: string | null;
  input: string | null;
  status: string | null;
  stdout: string | null;
  stderr: string | null;
  wallMs: number | null;
  truncated: boolean | null;
}

/** One assistant turn and the tool calls parsed from it. */
export interface TranscriptTurn {
  turn: number;
  text: string;
  tokens: number;
  finishReason: string;
  engineId: string;
  toolCalls: TranscriptToolCall[];
}

/** A rollout rebuilt from its events: prompt, turns, tool calls with code and output, reward and why. */
export interface RolloutTranscript {
  rolloutId: string;
  groupId: string;
  step: number;
  promptIdx: number;
  sampleIdx: number;
  promptId: string | null;
  problem: string | null;
  gold: string | null;
  policyVersion: number | null;
  engineId: string | null;
  sampling: { temperature: number; topP: number; seed: number } | null;
  turns: TranscriptTurn[];
  /** The full response (model and tool-response text) as the rollout recorded it. */
  responseText: string | null;
  finishReason: string | null;
  truncated: boolean | null;
  responseTokens: number | null;
  modelTokens: number | null;
  counters: { turns: number; toolCalls: number; toolErrors: number; answerBlocks: number; formatViolations: number } | null;
  reward: { reward: number; correct: boolean; extracted: string | null; rule: string; normalizedPrediction: string | null; normalizedGold: string | null } | null;
  resample: { status: 'kept' | 'dropped'; pErr: number | null; pFormat: number | null; groupDropped: string | null } | null;
}

/**
 * Rebuild one rollout's transcript from a run's index (pure). Tool calls whose turn was not recorded
 * (TurnGenerated missing) are attached to a placeholder turn so no call is hidden.
 * Throws {@link NotInRunError} for an unknown rollout id.
 */
export function rolloutTranscript(ix: RunIndex, rolloutId: string): RolloutTranscript {
  const r = ix.rollouts.get(rolloutId);
  if (!r) throw new NotInRunError('rollout', rolloutId, ix.runId, [...ix.rollouts.keys()]);
  const turns = new Map<number, TranscriptTurn>();
  for (const t of r.turns) {
    turns.set(t.turn, { turn: t.turn, text: t.text, tokens: t.tokenIds.length, finishReason: t.finishReason, engineId: t.engineId, toolCalls: [] });
  }
  for (const c of r.calls) {
    let t = turns.get(c.turn);
    if (!t) turns.set(c.turn, (t = { turn: c.turn, text: '', tokens: 0, finishReason: '(turn not recorded)', engineId: '', toolCalls: [] }));
    t.toolCalls.push({
      callId: c.callId,
      tool: c.requested?.tool ?? null,
      code: c.requested?.code ?? null,
      input: c.requested?.input ?? null,
      status: c.completed?.status ?? null,
      stdout: c.completed?.stdout ?? null,
      stderr: c.completed?.stderr ?? null,
      wallMs: c.completed?.wallMs ?? null,
      truncated: c.completed?.truncated ?? null,
    });
  }
  const q = r.requested;
  const c = r.completed;
  const w = r.reward;
  const rs = ix.groups.get(r.groupId)?.resampled ?? null;
  const pen = rs?.penalties.find((p) => p.rolloutId === rolloutId);
  return {
    rolloutId,
    groupId: r.groupId,
    step: r.step,
    promptIdx: r.promptIdx,
    sampleIdx: r.sampleIdx,
    promptId: q?.promptId ?? c?.promptId ?? null,
    problem: q?.problem ?? null,
    gold: q?.gold ?? c?.gold ?? w?.gold ?? null,
    policyVersion: c?.policyVersion ?? q?.policyVersion ?? null,
    engineId: c?.engineId ?? null,
    sampling: q ? { ...q.samplingParams } : null,
    turns: [...turns.values()].sort((a, b) => a.turn - b.turn),
    responseText: c?.responseText ?? null,
    finishReason: c?.finishReason ?? null,
    truncated: c?.truncated ?? null,
    responseTokens: c?.responseTokenIds.length ?? null,
    modelTokens: c ? c.lossMask.reduce<number>((a, m) => a + m, 0) : null,
    counters: c ? { turns: c.turns, toolCalls: c.toolCalls, toolErrors: c.toolErrors, answerBlocks: c.answerBlocks, formatViolations: c.formatViolations } : null,
    reward: w
      ? { reward: w.reward, correct: w.correct, extracted: w.extracted, rule: w.rule, normalizedPrediction: w.normalizedPrediction, normalizedGold: w.normalizedGold }
      : null,
    resample: rs
      ? { status: rs.kept.includes(rolloutId) ? 'kept' : 'dropped', pErr: pen?.pErr ?? null, pFormat: pen?.pFormat ?? null, groupDropped: rs.groupDropped }
      : null,
  };
}
