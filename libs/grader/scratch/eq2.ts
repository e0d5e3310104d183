import { parseLatex } from '../src/expression.evaluator';
import { leafLatex } from '../src/answer.compare';
import { compareEquations } from '../src/expression.compare';
const P = (s: string) => parseLatex(leafLatex(s));
for (const s of ['2x+y','0','y','-2x']) console.log(JSON.stringify(P(s)));
console.log(compareEquations([P('2x+y'), P('0')], [P('y'), P('-2x')]));
