import { grade } from '../src';
const cases: [string, string, boolean][] = [
  ['3.00001', '3', false], ['2.9999999', '3', false], ['\\sqrt{9.0000001}', '3', false], ['10^{100}', '1', false],
  ['1+10^{-20}', '1', false], ['e^{-1000}', '0', false], ['3+\\epsilon', '3', false], ['x', '5', false], ['x=5', '5', true],
  ['12 \\text{ or } 13', '12', false], ['1,2', '12', false], ['1{,}2', '12', false], ['-5', '5', false], ['\\pm 5', '5', false],
  ['|-5|', '5', true], ['0.333', '\\frac13', false], ['1000000000000000000001', '1000000000000000000000', false],
  ['100000000000000000000000000001', '100000000000000000000000000000', false], ['+5', '5', true], ['5 \\times 10^{3}', '5000', true],
  ['2^{10}', '1024', true], ['\\dfrac{22}{7}', '\\pi', false], ['3.1415927', '\\pi', true], ['9^{9^{9}}', '1', false], ['10^{10^{6}}', '1', false],
  ['10^{-400}', '0', false], ['(1,2)', '(2,1)', false], ['\\{1,2\\}', '\\{2,1\\}', true], ['1, 2', '\\{1,2\\}', true], ['x = 1, x = 2', '1, 2', true],
  ['x=1 \\text{ or } x=2', '1,2', true], ['[1, 2]', '[1,2)', false], ['(-\\infty, 3)', 'x<3', true], ['x > 3', '(3, \\infty)', true], ['2x > 6', 'x > 3', false],
  ['\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}', true], ['0.7071', '\\frac{\\sqrt2}{2}', false], ['0.70710678', '\\frac{\\sqrt2}{2}', true],
  ['6', '6.0', true], ['6.5', '6', false], ['\\frac{13}{2}', '6.5', true], ['1/2', '0.5', true], ['2\\frac{1}{2}', '2.5', true], ['2 1/2', '\\frac52', true],
  ['50\\%', '0.5', true], ['0.5', '50\\%', true], ['0.5', '50', false], ['50', '50\\%', true], ['5', '50\\%', false],
  ['\\text{(A)}', 'A', true], ['A', '(B)', false], ['a', '\\text{(A)}', true], ['\\text{yes}', '\\text{Yes}', true], ['\\text{no}', '\\text{yes}', false],
  ['2\\sqrt{2}', '\\sqrt{8}', true], ['\\sqrt{8}', '2.83', false], ['1+i', '1-i', false], ['i+1', '1+i', true], ['3-4j', '3-4i', true],
  ['y=x+1', 'y=x-1', false], ['x+1', 'y=x+1', true], ['x-y=1', 'y=x-1', true], ['2x-2y=2', 'x-y=1', true], ['x^2', 'x^3', false],
  ['\\frac{x+1}{x}', '1+\\frac1x', true], ['(x+1)^2', 'x^2+2x+1', true], ['(x+1)^2', 'x^2+x+1', false], ['x(x+1)', 'x^2+x', true],
  ['\\begin{pmatrix}1\\\\2\\end{pmatrix}', '\\begin{pmatrix}1\\\\3\\end{pmatrix}', false], ['\\begin{pmatrix}1&2\\end{pmatrix}', '(1,2)', false],
  ['1000', '1,000', true], ['1,000', '1000', true], ['1, 000', '1000', false], ['12\\,345', '12345', true], ['32, 349', '32349', false],
  ['\\$5.00', '5', true], ['5 \\text{ dollars}', '5', true], ['5 \\text{ meters}', '6', false], ['45^\\circ', '45', true], ['\\frac{\\pi}{4}', '45^\\circ', false],
  ['\\infty', '\\infty', true], ['-\\infty', '\\infty', false], ['\\emptyset', '\\{\\}', true], ['(-\\infty,\\infty)', '\\mathbb R', true],
  ['11', '011', true], ['0.1', '.1', true], ['1e-3', '0.001', true], ['2.5e3', '2500', true], ['\\frac{1}{0}', '\\infty', false],
  ['100!', '100!', true], ['\\frac{100!}{98!}', '9900', true], ['\\binom{5}{2}', '10', true], ['\\sin(\\pi/6)', '\\frac12', true],
  ['\\log_2 8', '3', true], ['\\ln(e^2)', '2', true], ['\\sqrt{2}^2', '2', true], ['2.0000001', '2', false], ['7', '7.0', true],
];
let bad = 0;
for (const [p, g, exp] of cases) {
  const v = grade(`The answer is $\\boxed{${p}}$.`, g);
  if (v.correct !== exp) { bad++; console.log('MISS', p, '|', g, 'exp', exp, v.rule, v.normalizedPrediction, '|', v.normalizedGold); }
}
console.log('bad', bad, 'of', cases.length);
