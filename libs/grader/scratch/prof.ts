import { readFileSync } from 'node:fs';
import { grade } from '../src';
const cs = readFileSync('libs/grader/fixtures/grading-cases.jsonl', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
for (const c of cs) grade(c.prediction, c.gold);
const t: [number, string][] = [];
for (const c of cs) { const t0 = performance.now(); for (let i = 0; i < 20; i++) grade(c.prediction, c.gold); t.push([(performance.now() - t0) / 20, c.id + ' ' + c.kind]); }
t.sort((a, b) => b[0] - a[0]); console.log(t.slice(0, 15).map(([a, b]) => a.toFixed(3) + ' ' + b).join('\n'));
console.log('total', t.reduce((s, x) => s + x[0], 0).toFixed(1));
