import { parseLatex } from '../src/expression.evaluator';
import { compareEquations, sampleEnvs } from '../src/expression.compare';
const P = (s: string) => parseLatex(s);
console.log(compareEquations([P('2x+y'), P('0')], [P('y'), P('-2x')]));
console.log(sampleEnvs(['x','y'], 2));
