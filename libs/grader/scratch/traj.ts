import { readFileSync, readdirSync } from 'node:fs';
import { grade } from '../src';
const dir = '/work/shared/trajectories';
for (const f of readdirSync(dir).filter((f) => f.endsWith('.jsonl'))) {
  const rows = readFileSync(`${dir}/${f}`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  let n = 0, agree = 0, graded = 0, correct = 0; const dis: string[] = [];
  const t0 = Date.now();
  for (const r of rows) {
    if (r.gold_answer === null || r.final_answer === null) continue;
    const gold = typeof r.gold_answer === 'string' ? r.gold_answer : JSON.stringify(r.gold_answer);
    const v = grade(String(r.final_answer), gold, { extract: false });
    graded++; if (v.correct) correct++;
    if (typeof r.meta?.correct === 'boolean') { n++; if (v.correct === r.meta.correct) agree++; else dis.push(`${r.id} src=${r.meta.correct} ours=${v.correct} ${v.rule} | ${String(r.final_answer).slice(0,80)} | ${gold.slice(0,80)}`); }
  }
  console.log(f, 'graded', graded, 'correct', correct, 'withVerdict', n, 'agree', agree, (agree / n * 100).toFixed(1), 'ms', Date.now() - t0);
  if (process.argv[2] === f) dis.forEach((d) => console.log('  ', d));
}
