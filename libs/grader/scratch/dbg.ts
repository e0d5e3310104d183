import { parseAnswer } from '../src/answer.parser';
import { compareNodes } from '../src/answer.compare';
const [p, g] = process.argv.slice(2);
const pn = parseAnswer(p), gn = parseAnswer(g);
console.log(JSON.stringify(pn)); console.log(JSON.stringify(gn));
console.log(compareNodes(pn, gn));
