import type { GenerateRequest, GenerateResult } from '@rstar/agent';
import { describe, expect, it } from 'vitest';
import { EngineUnavailableError } from './engine.errors';
import { EnginePool } from './engine.pool';
import type { EngineAdapter } from './engine.port';

/** An engine adapter in memory: answers each request once `release` is called, or fails when `down`. */
class MemoryEngine implements EngineAdapter {
  readonly kind = 'memory';
  down = false;
  readonly seen: string[] = [];
  private readonly gates: (() => void)[] = [];
  constructor(readonly id: string, private readonly capacity: number) {}
  async serverInfo() { return { kvCapacityTokens: this.capacity }; }
  async generate(req: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    this.seen.push(req.rid);
    if (this.down) throw new EngineUnavailableError(this.id, 'connection refused');
    await new Promise<void>((resolve, reject) => {
      this.gates.push(resolve);
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    return { tokenIds: [1], logprobs: [-1], text: 'x', finishReason: 'stop' };
  }
  /** Let every waiting request answer. */
  answerAll(): void { for (const g of this.gates.splice(0)) g(); }
  get waiting(): number { return this.gates.length; }
  async abort() {}
  async updateWeights() {}
  async flushCache() {}
  async health() { return !this.down; }
}

const req = (rid: string, inputLen: number, maxNew: number): GenerateRequest => ({ rid, inputIds: new Array(inputLen).fill(1), sampling: { temperature: 1, topP: 1, seed: 0, maxNewTokens: maxNew } });
const until = async (cond: () => boolean) => { while (!cond()) await new Promise((r) => setImmediate(r)); };

describe('EnginePool', () => {
  it('reserves prompt + max response, waits when no engine fits, and grants on release', async () => {
    const a = new MemoryEngine('a', 100);
    const pool = await EnginePool.create([a], 'kv-budget', { probeIntervalMs: 0 });
    const s1 = pool.open('r1');
    const s2 = pool.open('r2');
    const g1 = s1.generate(req('r1:0', 10, 50));
    await until(() => a.waiting === 1);
    const g2 = s2.generate(req('r2:0', 10, 50)); // 60 + 60 > 100: waits
    await new Promise((r) => setImmediate(r));
    expect(pool.scheduler.waiting()).toEqual(['r2']);
    a.answerAll();
    expect((await g1).engineId).toBe('a');
    s1.release();
    await until(() => a.waiting === 1);
    a.answerAll();
    expect((await g2).engineId).toBe('a');
    s2.release();
    expect(pool.scheduler.snapshot()[0].reserved).toBe(0);
    pool.close();
  });

  it('moves a rollout to another engine when its engine stops answering, sticky otherwise', async () => {
    const a = new MemoryEngine('a', 1000);
    const b = new MemoryEngine('b', 500);
    const states: string[] = [];
    const pool = await EnginePool.create([a, b], 'kv-budget', { probeIntervalMs: 0, onEngineState: (id, up) => states.push(`${id}:${up}`) });
    const s = pool.open('r1');
    const t0 = s.generate(req('r1:0', 10, 100));
    await until(() => a.waiting === 1);
    a.answerAll();
    expect((await t0).engineId).toBe('a');
    const other = pool.open('r2');
    const o0 = other.generate(req('r2:0', 10, 100)); // a has the most free capacity
    await until(() => a.waiting === 1);
    a.down = true;
    const t1 = s.generate(req('r1:1', 20, 90)); // fails on a, moves to b
    await until(() => b.waiting === 2); // r2's in-flight request was aborted and moved too
    b.answerAll();
    expect((await t1).engineId).toBe('b');
    expect((await o0).engineId).toBe('b');
    expect(states).toEqual(['a:false']);
    expect(pool.scheduler.stats.evicted).toBe(2);
    s.release();
    other.release();
    pool.close();
  });
});
