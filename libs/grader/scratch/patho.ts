import { grade } from '../src';
const tests = [
  '\\boxed{' + 'word '.repeat(3000) + '}',
  '\\boxed{' + '('.repeat(1500) + '1' + ')'.repeat(1500) + '}',
  '\\boxed{' + '{'.repeat(1500) + '1' + '}'.repeat(1500) + '}',
  '\\boxed{' + '1+'.repeat(900) + '1}',
  '\\boxed{' + '\\frac{1}{'.repeat(300) + '2' + '}'.repeat(300) + '}',
  '\\boxed{x^{x^{x^{x^{x^{x}}}}}}',
  '\\boxed{(((1,2),(3,4)),5)}',
  'a'.repeat(200000) + ' Answer: ' + 'b '.repeat(5000),
  '\\boxed{' + '\\sqrt{'.repeat(200) + '2' + '}'.repeat(200) + '}',
];
for (const t of tests) { const t0 = performance.now(); let r; try { r = grade(t, '1').rule; } catch (e) { r = 'THROW ' + (e as Error).message.slice(0, 80); } console.log((performance.now() - t0).toFixed(1), 'ms', r); }
