import { parseLatex } from '../src/expression.evaluator';
import { parseAnswer } from '../src/answer.parser';
import { normalizeLatex } from '../src';
const s = '1+'.repeat(900) + '1';
let t0 = performance.now(); normalizeLatex(s); console.log('norm', performance.now() - t0);
t0 = performance.now(); parseAnswer(s); console.log('parseAnswer', performance.now() - t0);
t0 = performance.now(); parseLatex(s); console.log('ce', performance.now() - t0);
const s2 = '1+'.repeat(400) + '1';
t0 = performance.now(); parseLatex(s2); console.log('ce400', performance.now() - t0);
