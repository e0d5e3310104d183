import { runSft, generateTasks, buildSftTrace, createLocalExecutor, Tokenizer } from './libs/policy/src';
(async () => {
  const ex = createLocalExecutor(); const tok = new Tokenizer();
  for (const t of generateTasks({ seed: 5, n: 6 })) { const tr = buildSftTrace(t, await ex({ code: t.code }), tok); console.log(tr.tokenIds.length, JSON.stringify(tr.text)); }
  const r = await runSft({ steps: Number(process.argv[2] ?? 60), outDir: '/tmp/sft-test', trainSize: 512 }, (p) => { if (p.phase === 'train' && p.step % 20 === 0) console.log(p.step, p.loss.toFixed(3), p.elapsedMs); });
  console.log(r.trainSeconds, r.trainTokensPerS, r.heldOut.toolFormat, r.heldOut.correct, r.heldOut.samples.slice(0, 2));
})();
