import { readFileSync } from 'node:fs';
import { grade } from '../src';
const lines = readFileSync('libs/grader/fixtures/grading-cases.jsonl', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
let ok = 0;
for (const c of lines) {
  let v;
  try { v = grade(c.prediction, c.gold); } catch (e) { console.log('THROW', c.id, (e as Error).message); continue; }
  if (v.correct === c.expected) ok++;
  else console.log('MISS', c.id, c.kind, 'exp', c.expected, JSON.stringify(v.extracted), '|', v.normalizedPrediction, '|', v.normalizedGold, '|', v.rule);
}
console.log(ok, '/', lines.length, (ok / lines.length * 100).toFixed(1));
