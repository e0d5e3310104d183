import { parseLatex, evaluate, freeVariables } from '../src/expression.evaluator';
for (const s of process.argv.slice(2)) { const j = parseLatex(s); console.log(s, JSON.stringify(j), [...freeVariables(j)], (()=>{try{return evaluate(j, new Map([['x',2],['y',3]]))}catch(e){return (e as Error).message}})()); }
