import { describe, expect, it } from 'vitest';
import { PolicyRunChangedError, PolicyVersionGate } from './policy-version.gate';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('PolicyVersionGate with partial rollouts', () => {
  it('given a partial rollout between turns, then an update does not wait for it; given one generating, then it is interrupted and the load waits for its answer', async () => {
    const gate = new PolicyVersionGate({ runId: 'r', version: 0, at: 0 });
    expect(await gate.enter('r', 0, 100, true)).toBe(0);
    // Between turns (tool calls): the update goes through at once.
    expect(await gate.update({ runId: 'r', version: 1, at: 1 }, async () => undefined)).toBe(true);
    const interrupts: string[] = [];
    const g = await gate.beginGenerate('r', () => interrupts.push('turn'));
    expect(g.policy.version).toBe(1);
    let loaded = false;
    const up = gate.update({ runId: 'r', version: 2, at: 2 }, async () => void (loaded = true));
    await tick();
    expect(interrupts).toEqual(['turn']);
    expect(loaded).toBe(false);
    // A new generation waits for the update; the interrupted one's answer lets the load run.
    const next = gate.beginGenerate('r', () => undefined);
    g.end();
    expect(await up).toBe(true);
    expect(loaded).toBe(true);
    expect((await next).policy.version).toBe(2);
    gate.leave(true);
    expect(gate.inFlight).toBe(0);
  });

  it('given an ordinary rollout in flight, then the update still waits for it before interrupting partial turns', async () => {
    const gate = new PolicyVersionGate({ runId: 'r', version: 0, at: 0 });
    await gate.enter('r', 0, 100);
    await gate.enter('r', 0, 100, true);
    const interrupted: number[] = [];
    const g = await gate.beginGenerate('r', () => interrupted.push(1));
    const up = gate.update({ runId: 'r', version: 1, at: 1 }, async () => undefined);
    await tick();
    expect(interrupted).toEqual([]);
    gate.leave();
    await tick();
    expect(interrupted).toEqual([1]);
    g.end();
    expect(await up).toBe(true);
  });

  it("given another run's weights loaded, then a partial turn cannot continue (PolicyRunChangedError)", async () => {
    const gate = new PolicyVersionGate({ runId: 'a', version: 3, at: 0 });
    await gate.update({ runId: 'b', version: 1, at: 5 }, async () => undefined);
    await expect(gate.beginGenerate('a', () => undefined)).rejects.toThrowError(PolicyRunChangedError);
  });
});
