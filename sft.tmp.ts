import { runSft } from './libs/policy/src';
(async () => {
  const r = await runSft({ steps: Number(process.argv[2] ?? 600), outDir: '/tmp/sft-run1' }, (p) => { if (p.phase === 'train' && p.step % 25 === 0) console.log(p.step, p.loss.toFixed(3), p.elapsedMs); });
  console.log(JSON.stringify({ s: r.trainSeconds, tps: r.trainTokensPerS, fmt: r.heldOut.toolFormat, correct: r.heldOut.correct, ck: r.checkpoint }));
  for (const s of r.heldOut.samples) console.log(JSON.stringify(s));
})();
