import type { EngineSession, GenerateRequest, GenerateResult, TurnSegment } from '@rstar/agent';
import type { PolicyVersionGate } from './policy-version.gate';

/** How often an interrupt is re-sent until the engine answers (the request may not have reached it yet), ms. */
const REINTERRUPT_MS = 50;

/**
 * An {@link EngineSession} for a partial rollout (docs/design/protocol.md §8): each generation registers with
 * the {@link PolicyVersionGate}; when a weight update interrupts it, the engine's abort answers with the
 * tokens and logprobs sampled so far (SGLang `/abort_request`, and the built-in and reference engines the
 * same way), the session waits for the new weights and resubmits the context plus exactly those token ids
 * (no re-tokenization) with the rest of the token budget, as a request `<rid>:p<k>`. The turn it returns is
 * the concatenation of the engine's answers; `segments` says which policy version sampled which tokens
 * (always set, one entry when nothing interrupted it). The continuation's sampling seed is `seed + k`, so
 * it does not replay the first stretch's random draws. A stop string that straddles the interruption is not
 * matched (each request checks only its own output).
 */
export class PartialRolloutSession implements EngineSession {
  /**
   * `inner`: the rollout's pool session; `runId`: its run; `interrupt(rid)`: ask the engine serving the
   * rollout to abort request `rid` (EnginePool.interrupt).
   */
  constructor(
    private readonly inner: EngineSession,
    private readonly gate: PolicyVersionGate,
    private readonly runId: string,
    private readonly interrupt: (rid: string) => Promise<void>,
  ) {}

  async generate(req: GenerateRequest): Promise<GenerateResult & { engineId: string }> {
    const tokenIds: number[] = [];
    const logprobs: number[] = [];
    const segments: TurnSegment[] = [];
    let last: (GenerateResult & { engineId: string }) | null = null;
    for (let k = 0; ; k++) {
      const rid = k === 0 ? req.rid : `${req.rid}:p${k}`;
      let interrupted = false;
      let timer: NodeJS.Timeout | undefined;
      const { policy, end } = await this.gate.beginGenerate(this.runId, () => {
        interrupted = true;
        const send = () => void this.interrupt(rid).catch(() => undefined);
        send();
        timer = setInterval(send, REINTERRUPT_MS);
      });
      let res: GenerateResult & { engineId: string };
      try {
        res = await this.inner.generate({
          inputIds: k === 0 ? req.inputIds : [...req.inputIds, ...tokenIds],
          sampling: { ...req.sampling, maxNewTokens: req.sampling.maxNewTokens - tokenIds.length, seed: req.sampling.seed + k },
          rid,
        });
      } finally {
        clearInterval(timer);
        end();
      }
      addSegment(segments, tokenIds.length, res.tokenIds.length, policy.version, res.weightVersion);
      tokenIds.push(...res.tokenIds);
      logprobs.push(...res.logprobs);
      last = res;
      const left = req.sampling.maxNewTokens - tokenIds.length;
      if (!(interrupted && res.finishReason === 'abort')) break;
      if (left <= 0) {
        last = { ...res, finishReason: 'length' };
        break;
      }
    }
    const first = segments[0];
    return {
      tokenIds, logprobs, text: '', finishReason: last.finishReason, engineId: last.engineId,
      ...(first.weightVersion === undefined ? {} : { weightVersion: first.weightVersion }),
      segments,
    };
  }
}

/**
 * Append `n` tokens sampled by `version` starting at token `from`: an empty stretch is recorded only while
 * nothing else is (and replaced by the next), and a stretch of the same version as the previous one extends it.
 */
function addSegment(segments: TurnSegment[], from: number, n: number, version: number, weightVersion: string | undefined): void {
  const prev = segments.at(-1);
  const wv = weightVersion === undefined ? {} : { weightVersion };
  if (prev && prev.policyVersion === version) return;
  if (prev && from === prev.fromToken) {
    segments[segments.length - 1] = { fromToken: from, policyVersion: version, ...wv };
    return;
  }
  if (n === 0 && prev) return;
  segments.push({ fromToken: from, policyVersion: version, ...wv });
}
