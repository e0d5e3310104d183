import { CharTokenizer, formatToolResponse, renderPrompt, renderToolCall, renderToolTurn, ANSWER_CLOSE, ANSWER_OPEN, IM_END, REASON_CLOSE, type ExecResult } from '@rstar/agent';
import { ids, makeEvent, streams, toolCallCompletedData, type EventData, type RstarEvent } from '@rstar/contracts';
import { buildTrainingBatch, clippedLossStats, resampleGroup, rngFromSeed, seedOf, type BatchGroup, type ResampleMode, type Rng } from '@rstar/grpo';

/** Grades one generated rollout, shaped like @rstar/replay's `RegradeFn` (which fits it). */
export type SyntheticGrader = (input: { rolloutId: string; responseText: string; gold: string; truncated: boolean }) =>
  | { reward: 0 | 1; correct: boolean; extracted: string | null; rule: string }
  | Promise<{ reward: 0 | 1; correct: boolean; extracted: string | null; rule: string }>;

/** Runs one tool call for the generator (the real sandbox, or the built-in arithmetic stand-in). */
export type SyntheticExecutor = (call: { code: string; input: string; timeoutMs: number; memoryMb: number }) => Promise<ExecResult>;

export interface SyntheticRunOptions {
  runId: string;
  seed: number;
  steps: number;
  promptsPerStep: number;
  /** Rollouts per prompt (2G). */
  samples: number;
  /** Rollouts kept per group (G). */
  keep: number;
  mode?: ResampleMode;
  /** Reasoning text per response in characters (= tokens of the char tokenizer), besides the tool calls, tool responses and answer; default 400. */
  responseChars?: number;
  /** Tool executor (default: {@link arithmeticExecutor}, exact for the programs the generator writes). */
  execute?: SyntheticExecutor;
  /**
   * Grader for RewardAssigned: `createRegrader()` of @rstar/replay for today's grader (given by the caller,
   * so that this test helper does not depend on @rstar/replay, whose own specs use it), or a test's variant.
   */
  grade: SyntheticGrader;
  /** First `recordedAt` (default 2025-01-01); each event is 1 ms later, so histories are byte-stable. */
  startAt?: Date;
}

const TOOL = 'python_code_with_standard_io';
const LIMITS = { timeoutMs: 4000, memoryMb: 384 };
const FILLER = 'Let me check the arithmetic carefully, one operation at a time, before answering. ';

/**
 * The built-in stand-in for the sandbox, exact for the programs this generator writes:
 * `print(A * B + C)` prints the value; a program naming the undefined `d` fails like CPython with a
 * NameError. Any other program is rejected (use the real sandbox for those).
 */
export const arithmeticExecutor: SyntheticExecutor = async ({ code }) => {
  const ok = /^print\((\d+) \* (\d+) \+ (\d+)\)$/.exec(code);
  if (ok) {
    const v = BigInt(ok[1]) * BigInt(ok[2]) + BigInt(ok[3]);
    return { status: 'ok', stdout: `${v}\n`, stderr: '', exitCode: 0, signal: null, wallMs: 1, cpuMs: 1, truncated: false };
  }
  if (/^print\(\d+ \* \d+ \+ d\)$/.test(code)) {
    return {
      status: 'runtime_error', stdout: '',
      stderr: `Traceback (most recent call last):\n  File "<code>", line 1, in <module>\n    ${code}\nNameError: name 'd' is not defined\n`,
      exitCode: 1, signal: null, wallMs: 1, cpuMs: 1, truncated: false,
    };
  }
  throw new Error(`arithmeticExecutor runs only the generator's own programs, got ${JSON.stringify(code)}`);
};

/** How one rollout behaves, drawn from its seeded stream. */
interface Plan {
  calls: Array<'ok' | 'error'>;
  answer: 'right' | 'wrong' | 'none' | 'twice';
  truncated: boolean;
  format: number;
}

function plan(rng: Rng, skill: number): Plan {
  const nCalls = rng() < 0.15 ? 0 : rng() < 0.7 ? 1 : 2;
  const calls = Array.from({ length: nCalls }, () => (rng() < 0.2 ? ('error' as const) : ('ok' as const)));
  const u = rng();
  const answer = u < 0.05 ? 'none' : u < 0.1 ? 'twice' : rng() < skill ? 'right' : 'wrong';
  return { calls, answer, truncated: rng() < 0.03, format: Math.floor(rng() * 4) };
}

/** Equivalent spellings of a value, so re-grading exercises several grader rules. */
function spell(v: bigint, format: number): string {
  switch (format) {
    case 1: return `${v}.0`;
    case 2: return `\\frac{${2n * v}}{2}`;
    case 3: return `{${v}}`;
    default: return `${v}`;
  }
}

/**
 * A realistic recorded run built by driving the real libraries over handmade rollouts:
 * arithmetic prompts rendered with the rStar2 template, multi-turn responses with tool calls (some
 * erroneous), answers in several spellings (some wrong, missing, repeated or truncated), tokens from the
 * char tokenizer, rewards from `o.grade`, GRPO-RoC picks from `resampleGroup`, the training batch
 * and its hash from `buildTrainingBatch` and the on-policy loss statistics from `clippedLossStats`.
 * There is no model: logprobs are drawn from the seeded stream, and StepOptimized has no checkpoint
 * (`checkpointUri`/`checkpointHash` empty, `gradNorm` 0). The same options always give the same events.
 */
export async function generateSyntheticRun(o: SyntheticRunOptions): Promise<RstarEvent[]> {
  const out: RstarEvent[] = [];
  for await (const chunk of syntheticRunSteps(o)) out.push(...chunk);
  return out;
}

/**
 * {@link generateSyntheticRun} one step at a time: yields each step's events (the first chunk starts with
 * `RunStarted`, the last one ends with `RunCompleted`), so a run of 10^5 rollouts can be stored as it is
 * generated instead of held in memory. Same events, same order.
 */
export async function* syntheticRunSteps(o: SyntheticRunOptions): AsyncGenerator<RstarEvent[]> {
  const execute = o.execute ?? arithmeticExecutor;
  const grade = o.grade;
  const mode = o.mode ?? 'weighted';
  const tok = new CharTokenizer();
  let clock = (o.startAt ?? new Date('2025-01-01T00:00:00.000Z')).getTime();
  const now = () => new Date(clock++);
  const out: RstarEvent[] = [];
  const runId = o.runId;
  const run = makeEvent('RunStarted', {
    runId, streamId: streams.run(runId), key: runId, producer: 'optimization', now,
    data: {
      config: { preset: 'synthetic', steps: o.steps, promptsPerStep: o.promptsPerStep, samples: o.samples, keep: o.keep, mode },
      seed: o.seed, codeVersion: 'synthetic', mode: 'standalone',
    },
  });
  out.push(run);
  let version = 0;
  for (let step = 0; step < o.steps; step++) {
    const stepKey = `${runId}:${step}`;
    const prompts = Array.from({ length: o.promptsPerStep }, (_, p) => {
      const r = rngFromSeed(seedOf('synthetic-prompt', o.seed, step, p));
      const a = 10 + Math.floor(r() * 990);
      const b = 10 + Math.floor(r() * 990);
      const c = Math.floor(r() * 1000);
      return { promptId: `arith-${a}-${b}-${c}`, a, b, c, value: BigInt(a) * BigInt(b) + BigInt(c), skill: r() < 0.15 ? 1 : r() < 0.15 ? 0 : r() };
    });
    const started = makeEvent('StepStarted', {
      runId, streamId: streams.step(runId, step), key: stepKey, producer: 'optimization', now, causedBy: run,
      data: { step, stage: 'synthetic', promptIds: prompts.map((p) => p.promptId), policyVersion: version },
    });
    out.push(started);
    const batchGroups: BatchGroup[] = [];
    let rewardSum = 0;
    for (let p = 0; p < prompts.length; p++) {
      const pr = prompts[p];
      const groupId = ids.group(runId, step, p);
      const problem = `Compute ${pr.a} \\times ${pr.b} + ${pr.c}.`;
      const promptTokenIds = tok.encode(renderPrompt(problem, { compact: true }));
      const members: Array<{ completed: EventData<'RolloutCompleted'>; reward: 0 | 1 }> = [];
      for (let s = 0; s < o.samples; s++) {
        const rolloutId = ids.rollout(runId, step, p, s);
        const stream = streams.rollout(rolloutId);
        const rng = rngFromSeed(seedOf('synthetic-rollout', o.seed, rolloutId));
        const requested = makeEvent('RolloutRequested', {
          runId, streamId: stream, key: rolloutId, producer: 'optimization', now, causedBy: started,
          data: {
            rolloutId, groupId, step, promptIdx: p, sampleIdx: s, promptId: pr.promptId, problem, gold: `${pr.value}`,
            samplingParams: { temperature: 1, topP: 1, seed: s }, budget: { maxTokens: 4096, maxTurns: 4 }, policyVersion: version,
            resample: { expected: o.samples, keep: o.keep, mode, runSeed: o.seed, timeoutS: 600 },
          },
        });
        out.push(requested);
        const pl = plan(rng, pr.skill);
        const response: number[] = [];
        const mask: Array<0 | 1> = [];
        const logprobs: number[] = [];
        let text = '';
        let toolErrors = 0;
        const filler = FILLER.repeat(Math.max(0, Math.round((o.responseChars ?? 400) / FILLER.length / (pl.calls.length + 1))));
        const model = (t: string) => {
          const ids_ = tok.encode(t);
          for (const id of ids_) {
            response.push(id);
            mask.push(1);
            // 4 decimals, like the float32 logprobs an engine returns, keeps recorded histories small.
            logprobs.push(Math.round(Math.log(0.02 + 0.98 * rng()) * 1e4) / 1e4);
          }
          text += t;
          return ids_;
        };
        const tool = (t: string) => {
          for (const id of tok.encode(t)) {
            response.push(id);
            mask.push(0);
            logprobs.push(0);
          }
          text += t;
        };
        const answerBlock = (v: string) => `${REASON_CLOSE}\n${ANSWER_OPEN}\nThe answer is \\boxed{${v}}.\n${ANSWER_CLOSE}`;
        let turn = 0;
        for (const kind of pl.calls) {
          const code = kind === 'ok' ? `print(${pr.a} * ${pr.b} + ${pr.c})` : `print(${pr.a} * ${pr.b} + d)`;
          const turnText = `${filler}I will compute it with Python.\n${renderToolCall(code, '')}${IM_END}`;
          const turnIds = model(turnText);
          out.push(makeEvent('TurnGenerated', {
            runId, streamId: stream, key: `${rolloutId}:${turn}`, producer: 'policy-serving', now, causedBy: requested,
            data: { rolloutId, turn, tokenIds: turnIds, logprobs: logprobs.slice(-turnIds.length), text: turnText, finishReason: 'stop', engineId: 'synthetic-0' },
          }));
          const callId = ids.toolCall(rolloutId, turn, 0);
          const callReq = makeEvent('ToolCallRequested', {
            runId, streamId: stream, key: callId, producer: 'policy-serving', now, causedBy: requested,
            data: { callId, rolloutId, turn, tool: TOOL, code, input: '', limits: LIMITS },
          });
          const res = await execute({ code, input: '', ...LIMITS });
          if (res.status !== 'ok') toolErrors++;
          out.push(callReq, makeEvent('ToolCallCompleted', {
            runId, streamId: stream, key: callId, producer: 'tool-execution', now, causedBy: callReq,
            data: toolCallCompletedData({ callId, rolloutId, turn }, res),
          }));
          tool(renderToolTurn([formatToolResponse(res)]));
          turn++;
        }
        const wrong = pr.value + BigInt(1 + Math.floor(rng() * 9));
        const last =
          pl.answer === 'none' ? `${filler}${IM_END}`
            : pl.answer === 'twice' ? `${filler}${answerBlock(spell(wrong, 0))}\n${ANSWER_OPEN}\n\\boxed{${spell(pr.value, pl.format)}}\n${ANSWER_CLOSE}${IM_END}`
              : `${filler}${answerBlock(spell(pl.answer === 'right' ? pr.value : wrong, pl.format))}${IM_END}`;
        const lastIds = model(last);
        out.push(makeEvent('TurnGenerated', {
          runId, streamId: stream, key: `${rolloutId}:${turn}`, producer: 'policy-serving', now, causedBy: requested,
          data: { rolloutId, turn, tokenIds: lastIds, logprobs: logprobs.slice(-lastIds.length), text: last, finishReason: pl.truncated ? 'length' : 'stop', engineId: 'synthetic-0' },
        }));
        const answers = pl.answer === 'none' ? 0 : pl.answer === 'twice' ? 2 : 1;
        const completed = makeEvent('RolloutCompleted', {
          runId, streamId: stream, key: rolloutId, producer: 'policy-serving', now, causedBy: requested,
          data: {
            rolloutId, groupId, step, promptId: pr.promptId, gold: `${pr.value}`, engineId: 'synthetic-0', policyVersion: version,
            promptTokenIds, responseTokenIds: response, logprobs, lossMask: mask, responseText: text, turns: turn + 1,
            toolCalls: pl.calls.length, toolErrors, answerBlocks: answers, formatViolations: pl.answer === 'twice' ? 1 : 0,
            truncated: pl.truncated, finishReason: pl.truncated ? 'budget' : answers ? 'answer' : 'no_tool_call',
          },
        });
        out.push(completed);
        const v = await grade({ rolloutId, responseText: text, gold: `${pr.value}`, truncated: pl.truncated });
        out.push(makeEvent('RewardAssigned', {
          runId, streamId: stream, key: rolloutId, producer: 'reward-grading', now, causedBy: completed,
          data: { rolloutId, groupId, step, reward: v.reward, correct: v.correct, extracted: v.extracted, gold: `${pr.value}`, normalizedPrediction: null, normalizedGold: null, rule: v.rule, ms: 0 },
        }));
        members.push({ completed: completed.data, reward: v.reward });
        rewardSum += v.reward;
      }
      const r = resampleGroup({
        groupId, G: o.keep, mode, runSeed: o.seed, step,
        rollouts: members.map((m) => ({ rolloutId: m.completed.rolloutId, reward: m.reward, toolCalls: m.completed.toolCalls, toolErrors: m.completed.toolErrors, answerBlocks: m.completed.answerBlocks, turns: m.completed.turns })),
      });
      out.push(makeEvent('GroupResampled', {
        runId, streamId: streams.group(groupId), key: groupId, producer: 'resampling', now,
        data: {
          groupId, step, promptId: pr.promptId, mode, seed: r.seed, kept: r.kept, dropped: r.dropped, penalties: r.penalties,
          rewards: Object.fromEntries(members.map((m) => [m.completed.rolloutId, m.reward])), groupDropped: r.groupDropped, received: members.length, expected: o.samples,
        },
      }));
      if (r.kept.length) {
        const byId = new Map(members.map((m) => [m.completed.rolloutId, m]));
        batchGroups.push({
          groupId,
          rollouts: r.kept.map((id) => {
            const m = byId.get(id)!;
            return { rolloutId: id, reward: m.reward, promptTokenIds: m.completed.promptTokenIds, responseTokenIds: m.completed.responseTokenIds, logprobs: m.completed.logprobs, lossMask: m.completed.lossMask };
          }),
        });
      }
    }
    const batch = buildTrainingBatch(batchGroups);
    if (batch.sequences.length) {
      const loss = clippedLossStats(batch.sequences.map((sq) => ({ logpNew: sq.oldLogprobs, logpOld: sq.oldLogprobs, mask: sq.lossMask, advantage: sq.advantage })));
      version++;
      out.push(makeEvent('StepOptimized', {
        runId, streamId: streams.step(runId, step), key: stepKey, producer: 'optimization', now,
        data: {
          step, loss: loss.loss, clipFraction: loss.clipFraction, approxKl: loss.approxKl, entropy: null, gradNorm: 0,
          advantageMean: batch.advantageMean, advantageStd: batch.advantageStd, tokens: batch.tokens, rollouts: batch.sequences.length,
          batchHash: batch.hash, newPolicyVersion: version, checkpointUri: '', checkpointHash: '',
        },
      }));
      out.push(makeEvent('PolicyUpdated', { runId, streamId: streams.run(runId), key: stepKey, producer: 'optimization', now, data: { version, checkpointUri: '', checkpointHash: '' } }));
    }
    out.push(makeEvent('StepCompleted', {
      runId, streamId: streams.step(runId, step), key: stepKey, producer: 'optimization', now,
      data: { step, stage: 'synthetic', metrics: { rewardMean: rewardSum / (prompts.length * o.samples), batchTokens: batch.tokens, policyVersion: version } },
    }));
    if (step < o.steps - 1) yield out.splice(0);
  }
  out.push(makeEvent('RunCompleted', { runId, streamId: streams.run(runId), key: runId, producer: 'optimization', now, data: { steps: o.steps, summary: { policyVersion: version } } }));
  yield out.splice(0);
}
