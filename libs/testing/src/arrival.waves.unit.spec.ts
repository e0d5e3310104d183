import { describe, expect, it } from 'vitest';
import { submitInWaves, WaveSettingsError } from './arrival.waves';

/** Items the test finishes by hand, so the order of submissions is checked without any clock. */
function manual() {
  const started: string[] = [];
  const done = new Map<string, (v: string) => void>();
  const fail = new Map<string, (e: Error) => void>();
  const start = (w: number, i: number) =>
    new Promise<string>((res, rej) => {
      const k = `${w}:${i}`;
      started.push(k);
      done.set(k, res);
      fail.set(k, rej);
    });
  const flush = () => new Promise((r) => setImmediate(r));
  return { started, done, fail, start, flush };
}

describe('submitInWaves (η = 1 arrival)', () => {
  it('submits the next wave at half of the current one and never more than two waves in flight', async () => {
    const m = manual();
    const all = submitInWaves({ waves: 3, perWave: 4 }, m.start);
    await m.flush();
    expect(m.started).toEqual(['0:0', '0:1', '0:2', '0:3']);
    m.done.get('0:0')?.('a');
    await m.flush();
    expect(m.started).toHaveLength(4);
    m.done.get('0:3')?.('d');
    await m.flush();
    // Half of wave 0 finished: wave 1 is in flight beside wave 0's rest.
    expect(m.started.slice(4)).toEqual(['1:0', '1:1', '1:2', '1:3']);
    for (const k of ['1:0', '1:1', '1:2']) m.done.get(k)?.(k);
    await m.flush();
    // Wave 1 is past half, but wave 0 still runs: wave 2 would make three steps in flight.
    expect(m.started).toHaveLength(8);
    m.done.get('0:1')?.('b');
    m.done.get('0:2')?.('c');
    await m.flush();
    expect(m.started.slice(8)).toEqual(['2:0', '2:1', '2:2', '2:3']);
    m.done.get('1:3')?.('1:3');
    for (let i = 0; i < 4; i++) m.done.get(`2:${i}`)?.(`2:${i}`);
    expect(await all).toEqual([['a', 'b', 'c', 'd'], ['1:0', '1:1', '1:2', '1:3'], ['2:0', '2:1', '2:2', '2:3']]);
  });

  it('rejects with the first error and submits no later wave', async () => {
    const m = manual();
    const all = submitInWaves({ waves: 3, perWave: 2 }, m.start);
    await m.flush();
    m.fail.get('0:0')?.(new Error('engine down'));
    await m.flush();
    m.done.get('0:1')?.('x');
    m.done.get('1:0')?.('y');
    m.done.get('1:1')?.('z');
    await expect(all).rejects.toThrow('engine down');
    expect(m.started).toEqual(['0:0', '0:1', '1:0', '1:1']);
  });

  it('refuses settings that describe no arrival, naming the field', async () => {
    const start = async () => 1;
    await expect(submitInWaves({ waves: 0, perWave: 2 }, start)).rejects.toThrow(WaveSettingsError);
    await expect(submitInWaves({ waves: 2, perWave: 1.5 }, start)).rejects.toThrow(/perWave must be a positive integer/);
    await expect(submitInWaves({ waves: 2, perWave: 2, overlapAt: 0 }, start)).rejects.toThrow(/overlapAt must be a share in \(0, 1\]/);
  });
});
