import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { ProgressPrinter } from './progress.printer';

describe('ProgressPrinter', () => {
  it('explains the step line once, numbers steps from 0 like metrics.csv, and gives the time left', () => {
    const out: string[] = [];
    let t = 0;
    const p = new ProgressPrinter(false, (s) => void out.push(s), new PassThrough(), () => t);
    for (let step = 0; step < 3; step++) {
      t += 10_000;
      p.onProgress({ phase: 'rl', step, steps: 3, stage: 'rl-1', metrics: { rewardMean: 0.5, timeStepMs: 10_000, policyVersion: step + 1 } });
    }
    const text = out.join('');
    expect(text.match(/per-step line/g)).toHaveLength(1);
    expect(text).toContain('toolErr+ erroneous tool calls');
    const lines = text.split('\n').filter((l) => l.startsWith('step '));
    expect(lines.map((l) => l.split(' ')[1])).toEqual(['0/2', '1/2', '2/2']);
    expect(lines[0]).toMatch(/ eta 20s$/);
    expect(lines[2]).toMatch(/ eta 0s$/);
  });

  it('without a TTY prints each phase every 10% with the elapsed time and the ETA', () => {
    const err = new PassThrough();
    let text = '';
    err.on('data', (b) => (text += b.toString()));
    let t = 0;
    const p = new ProgressPrinter(false, () => undefined, err, () => t);
    for (let step = 1; step <= 100; step++) {
      t += 1000;
      p.onProgress({ phase: 'sft', step, steps: 100, loss: 1 });
    }
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(11);
    // The phase starts at its first report (step 1, t = 1 s).
    expect(lines[5]).toMatch(/^sft 50\/100 \| 49s elapsed \| ETA 49s \| loss 1.000$/);
  });
});

describe('rstar train --help', () => {
  it('lists every preset under configs/ with its description', () => {
    const root = join(__dirname, '../../../..');
    const help = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'libs/cli/src/main.ts'), 'train', '--help'], { cwd: root, encoding: 'utf8' });
    const presets = readdirSync(join(root, 'configs')).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5));
    expect(presets.length).toBeGreaterThan(4);
    for (const name of presets) expect(help).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
  });
});
