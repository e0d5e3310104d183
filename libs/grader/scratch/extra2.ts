import { grade } from '../src';
const cases: [string, string, boolean][] = [
  ['\\textbf{(C)}', '\\text{(C)}', true], ['\\text{C}', '(C)', true], ['(D)', 'C', false], ['\\text{(B) } \\frac12', 'B', true],
  ['\\sqrt{3}/2', '\\frac{\\sqrt{3}}{2}', true], ['\\frac{\\pi}{3}', '60^\\circ', false], ['60', '60^\\circ', true],
  ['5, 3', '3, 5', true], ['3, 5, 5', '3, 5', false], ['\\left( 1, 2 \\right)', '(1,2)', true], ['10\\text{cm}', '10', true],
  ['\\$1,000', '1000', true], ['1/3', '\\frac{1}{3}', true], ['12.5\\%', '\\frac18', true], ['\\text{Monday}', '\\text{monday}', true],
  ['\\text{John and Mary}', '\\text{John and Mary}', true], ['\\text{Mary and John}', '\\text{John and Mary}', false],
  ['x \\in (2, 5)', '(2,5)', true], ['(2,5)', '2<x<5', true], ['[2,5]', '2 < x < 5', false], ['x \\le -1 \\text{ or } x \\ge 1', '(-\\infty,-1] \\cup [1,\\infty)', false],
  ['(-\\infty,-1] \\cup [1,\\infty)', '(-\\infty, -1] \\cup [1, \\infty)', true], ['[1,\\infty) \\cup (-\\infty,-1]', '(-\\infty, -1] \\cup [1, \\infty)', true],
  ['\\{3\\}', '3', true], ['3', '\\{3\\}', true], ['x=3', '\\{3\\}', true], ['\\frac{-b}{2a}', '-\\frac{b}{2a}', true],
  ['a^2+2ab+b^2', '(a+b)^2', true], ['a^2+b^2', '(a+b)^2', false], ['\\frac{1}{\\sqrt{3}}', '\\frac{\\sqrt3}{3}', true],
  ['2\\pi r', '2 \\pi r', true], ['\\pi r^2', '\\pi r^{2}', true], ['4.0', '4', true], ['4.00001', '4', false],
  ['-\\frac{1}{2}', '-0.5', true], ['\\frac{1}{-2}', '-\\frac12', true], ['0.50', '\\frac12', true], ['1.0e3', '1000', true],
  ['\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}', '\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}', true],
  ['\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}', '\\begin{pmatrix} 1 & 0 \\\\ 1 & 1 \\end{pmatrix}', false],
  ['\\begin{bmatrix} 2 \\\\ 4 \\end{bmatrix}', '2\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}', true],
  ['3 + 4i', '3+4i', true], ['3 - 4i', '3+4i', false], ['5i', 'i5', true], ['\\frac{3}{5} + \\frac{4}{5}i', '\\frac{3+4i}{5}', true],
  ['y = 2x + 1', '2x - y + 1 = 0', true], ['y = 2x + 1', 'y = 2x + 2', false], ['x^2 + y^2 = 4', 'x^2+y^2=4', true], ['x^2+y^2=2', 'x^2+y^2=4', false],
  ['k > 2', 'k>2', true], ['k < 2', 'k > 2', false], ['2 < k', 'k > 2', true], ['k \\geq 2', '[2, \\infty)', true], ['k > 2', '[2, \\infty)', false],
  ['\\text{even}', '\\text{odd}', false], ['\\text{True}', '\\text{true}', true], ['no', 'yes', false],
  ['1\\frac{1}{2}', '\\frac32', true], ['-1\\frac{1}{2}', '-\\frac32', true], ['1 \\frac{1}{2}', '1.5', true],
  ['3 \\text{ or } 5', '3', false], ['3 \\text{ and } 5', '5, 3', true], ['1,000,000', '10^6', true], ['1,000,00', '100000', false],
  ['\\sqrt{2}', '1.41421356', true], ['1.41421356', '1.41421356', true], ['1.4142', '1.41421356', false],
  ['\\frac{22}{7}', '3.142857', false], ['0.1', '\\frac{1}{10}', true], ['\\dfrac{\\sqrt{5}-1}{2}', '\\frac{-1+\\sqrt5}{2}', true],
  ['\\frac{1}{2}\\sqrt{2}', '\\frac{\\sqrt{2}}{2}', true], ['\\sqrt{2}+\\sqrt{3}', '\\sqrt{5+2\\sqrt6}', true], ['\\sqrt{2}+\\sqrt{3}', '\\sqrt5', false],
  ['\\log_{2} 3', '\\frac{\\ln 3}{\\ln 2}', true], ['e', 'e^1', true], ['e^{i\\pi}', '-1', false],
  ['\\binom{10}{3}', '120', true], ['\\frac{10!}{3!7!}', '120', true], ['10^{-30}', '0', false], ['0', '10^{-30}', false],
  ['\\infty', '+\\infty', true], ['\\text{undefined}', '\\text{undefined}', true], ['\\text{none}', '0', false],
];
let bad = 0;
for (const [p, g, exp] of cases) {
  const v = grade(`The answer is $\\boxed{${p}}$.`, g);
  if (v.correct !== exp) { bad++; console.log('MISS', p, '|', g, 'exp', exp, v.rule, v.normalizedPrediction, '|', v.normalizedGold); }
}
console.log('bad', bad, 'of', cases.length);
