import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunConfig } from '@rstar/contracts';
import { DatasetError, readJsonlDataset, runPrompts } from './prompt.sources';

const file = (text: string) => {
  const p = join(mkdtempSync(join(tmpdir(), 'rstar-ds-')), 'd.jsonl');
  writeFileSync(p, text);
  return p;
};

describe('readJsonlDataset', () => {
  it('reads {id, problem, answer} rows and accepts question/gold aliases', () => {
    const rows = readJsonlDataset(file('{"id":"a","problem":"1+1?","answer":2}\n\n{"question":"2+2?","gold":"4"}\n'));
    expect(rows).toEqual([
      { promptId: 'a', problem: '1+1?', gold: '2' },
      { promptId: 'line-3', problem: '2+2?', gold: '4' },
    ]);
  });

  it('names the line and the field of a bad row', () => {
    expect(() => readJsonlDataset(file('{"id":"a","problem":"x"}\n'))).toThrow(/:1 has no "answer"/);
    expect(() => readJsonlDataset(file('not json\n'))).toThrow(DatasetError);
    expect(() => readJsonlDataset('/nonexistent/d.jsonl')).toThrow(/does not exist/);
  });
});

describe('runPrompts', () => {
  it('gives the task family disjoint, seeded training and held-out pools', () => {
    const config = parseRunConfig({ seed: 3, data: { source: 'tasks', heldOutSize: 8, trainSize: 32 }, stages: [{ name: 's', steps: 1, promptsPerStep: 1, maxResponseTokens: 16, lr: 1e-3 }] });
    const a = runPrompts(config, (p) => p);
    const b = runPrompts(config, (p) => p);
    expect(a.train.size).toBe(32);
    expect(a.heldOut).toHaveLength(8);
    expect(b.heldOut).toEqual(a.heldOut);
    const trainIds = new Set(a.train.prompts.map((p) => p.promptId));
    expect(a.heldOut.some((p) => trainIds.has(p.promptId))).toBe(false);
  });

  it('holds out the last rows of a dataset file when no held-out file is given', () => {
    const rows = Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `r${i}`, problem: `p${i}`, answer: i })).join('\n');
    const config = parseRunConfig({ data: { source: 'file', path: file(rows), heldOutSize: 3 }, stages: [{ name: 's', steps: 1, promptsPerStep: 1, maxResponseTokens: 16, lr: 1e-3 }] });
    const r = runPrompts(config, (p) => p);
    expect(r.train.prompts.map((p) => p.promptId)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    expect(r.heldOut.map((p) => p.promptId)).toEqual(['r7', 'r8', 'r9']);
  });
});
