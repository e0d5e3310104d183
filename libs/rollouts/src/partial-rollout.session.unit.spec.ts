import { describe, expect, it } from 'vitest';
import type { EngineSession, GenerateRequest, GenerateResult } from '@rstar/agent';
import { PartialRolloutSession } from './partial-rollout.session';
import { PolicyVersionGate } from './policy-version.gate';

/**
 * A scripted engine for the session's bookkeeping: each request answers with the next scripted stretch; a
 * stretch marked `interrupt` first runs the given weight update (as a PolicyUpdated would) and answers `abort`.
 */
function scripted(gate: PolicyVersionGate, stretches: { tokens: number[]; interruptTo?: number }[]): { session: EngineSession; requests: GenerateRequest[] } {
  const requests: GenerateRequest[] = [];
  let i = 0;
  const session: EngineSession = {
    generate: async (req) => {
      requests.push(req);
      const s = stretches[i++];
      let finish: GenerateResult['finishReason'] = 'stop';
      if (s.interruptTo !== undefined) {
        const v = s.interruptTo;
        void gate.update({ runId: 'r', version: v, at: v }, async () => undefined);
        await new Promise((r) => setTimeout(r, 1));
        finish = 'abort';
      }
      return { tokenIds: s.tokens, logprobs: s.tokens.map((t) => -t / 100), text: '', finishReason: finish, engineId: 'e', weightVersion: String(gate.loadedVersion) };
    },
  };
  return { session, requests };
}

const req = (maxNewTokens: number): GenerateRequest => ({ rid: 'x:0', inputIds: [1, 2], sampling: { temperature: 1, topP: 1, seed: 5, maxNewTokens } });

describe('PartialRolloutSession', () => {
  it('given an interruption, then it resubmits the context plus the sampled ids with the rest of the budget and records both versions', async () => {
    const gate = new PolicyVersionGate({ runId: 'r', version: 0, at: 0 });
    const { session, requests } = scripted(gate, [{ tokens: [7, 8, 9], interruptTo: 1 }, { tokens: [10, 11] }]);
    const out = await new PartialRolloutSession(session, gate, 'r', async () => undefined).generate(req(10));
    expect(out.tokenIds).toEqual([7, 8, 9, 10, 11]);
    expect(out.logprobs).toEqual([-0.07, -0.08, -0.09, -0.1, -0.11]);
    expect(out.finishReason).toBe('stop');
    expect(out.segments).toEqual([{ fromToken: 0, policyVersion: 0, weightVersion: '0' }, { fromToken: 3, policyVersion: 1, weightVersion: '1' }]);
    expect(requests[1]).toEqual({ rid: 'x:0:p1', inputIds: [1, 2, 7, 8, 9], sampling: { temperature: 1, topP: 1, seed: 6, maxNewTokens: 7 } });
  });

  it('given an interruption before any token, then the turn is one stretch under the new version', async () => {
    const gate = new PolicyVersionGate({ runId: 'r', version: 0, at: 0 });
    const { session } = scripted(gate, [{ tokens: [], interruptTo: 1 }, { tokens: [4, 5] }]);
    const out = await new PartialRolloutSession(session, gate, 'r', async () => undefined).generate(req(10));
    expect(out.segments).toEqual([{ fromToken: 0, policyVersion: 1, weightVersion: '1' }]);
  });

  it('given an interruption that used the whole budget, then the turn ends by length without another request', async () => {
    const gate = new PolicyVersionGate({ runId: 'r', version: 0, at: 0 });
    const { session, requests } = scripted(gate, [{ tokens: [1, 2, 3], interruptTo: 1 }]);
    const out = await new PartialRolloutSession(session, gate, 'r', async () => undefined).generate(req(3));
    expect(out.finishReason).toBe('length');
    expect(requests).toHaveLength(1);
    expect(out.segments).toEqual([{ fromToken: 0, policyVersion: 0, weightVersion: '0' }]);
  });
});
