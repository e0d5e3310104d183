import { connectRuntime } from '@rstar/messaging';
import { parseRunConfig } from '@rstar/contracts';
import { PolicyModel } from '@rstar/policy';
import { readRunEvents } from './event-store.sources';
import { runTraining } from './training.run';
(async () => {
  const rt = await connectRuntime({ natsUrl: '', databaseUrl: '' });
  const config = parseRunConfig({
    name: 'lp', seed: 1, policy: { init: 'checkpoint', checkpoint: 'test/fixtures/train-tiny-sft' },
    stages: [{ name: 'rl-1', steps: 1, promptsPerStep: 8, groupSize: 4, oversample: 2, maxResponseTokens: 112, maxTurns: 3, lr: 0.0005 }],
  });
  const res = await runTraining(config, { runtime: rt, outDir: '/tmp/g/lp', skipEval: true });
  const ev = await readRunEvents(rt.store, res.runId, ['RolloutCompleted']);
  console.log('metrics', JSON.stringify(res.steps[0].metrics));
  const m = await PolicyModel.load('test/fixtures/train-tiny-sft');
  for (const r of (ev as any[]).slice(0, 12)) {
    const d = r.data;
    const seq = [...d.promptTokenIds, ...d.responseTokenIds];
    const lp = m.sequenceLogprobs([seq])[0];
    const P = d.promptTokenIds.length;
    let maxd = 0, at = -1, sum = 0, n = 0;
    d.responseTokenIds.forEach((t: number, i: number) => { if (!d.lossMask[i]) return; const diff = Math.abs(lp[P + i] - d.logprobs[i]); sum += diff; n++; if (diff > maxd) { maxd = diff; at = i; } });
    console.log(d.rolloutId.slice(-8), 'n', n, 'meanAbsDiff', (sum / n).toFixed(4), 'max', maxd.toFixed(3), 'at', at, 'tok', JSON.stringify(m.tokenizer.decode([d.responseTokenIds[at]])), 'engine', d.logprobs[at]?.toFixed(3), 'recomp', lp[P + at]?.toFixed(3), 'maskSum', d.lossMask.reduce((a: number, b: number) => a + b, 0), 'len', d.responseTokenIds.length);
  }
  await rt.close();
  process.exit(0);
})();
