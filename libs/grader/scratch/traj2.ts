import { compareWithRecordedVerdicts } from '../src';
const r = compareWithRecordedVerdicts();
let n = 0, a = 0;
for (const f of r) { n += f.withVerdict; a += f.agree; console.log(f.file, f.graded, f.correct, f.withVerdict, f.agree); }
console.log('overall', a, n, (a / n * 100).toFixed(2));
for (const f of r) for (const d of f.disagreements) if (process.argv[2] === 'all' || d.ours) console.log(JSON.stringify(d).slice(0, 220));
