import { describe, expect, it } from 'vitest';
import { grade } from '../src';

/**
 * Cases written for each kind of fault the grader had on answers nobody here wrote (relations,
 * structures, numbers, extraction, hedges, plain-text golds), including adversarial ones a held-back set
 * would hold: [answer in a box, gold, expected verdict].
 */
type Case = [string, string, boolean];

const RELATIONS: Case[] = [
  // An inequality written the other way round or multiplied by -1 is the same solved inequality.
  ['-x > -1', 'x < 1', true], ['-x \\leq 2', 'x \\geq -2', true], ['-x > -1', 'x > 1', false], ['1 > x', 'x < 1', true],
  ['-3 < -x < 2', '-2 < x < 3', true], ['-3 < -x < 2', '-2 < x \\le 3', false], ['-x \\ge 4', '(-\\infty, -4]', true],
  // A restated, unsolved inequality is still not its solution (rule 8).
  ['-2x > -6', 'x < 3', false], ['2x > 6', 'x > 3', false],
  // Chained inequalities with any spacing.
  ['1<x<3', '1 < x < 3', true], ['1\\le x\\le3', '1 \\leq x \\leq 3', true], ['-1 \\lt x \\lt 2', '-1<x<2', true],
  ['2 \\geq x \\geq -1', '-1 \\leq x \\leq 2', true], ['1 < x \\le 3', '1<x<3', false], ['\\frac12<x<3', '0.5 < x < 3', true],
  ['1\\,<\\,x\\,<\\,3', '1<x<3', true], ['1 <x< 3', '(1,3)', true],
  // Equations: the label may stand on either side; a function's argument is a bound name.
  ['5 = x', '5', true], ['5 = x', '6', false], ['\\frac{7}{2} = t', 't = 3.5', true],
  ['f(t) = t^2 + 1', 'f(x) = x^2 + 1', true], ['p(t)=3t-2', 'p(x) = 3x - 2', true], ['f(t) = t^2+1', 'f(x) = x^2+2', false],
  ['g(u) = \\frac{1}{u}', 'g(x)=\\frac1x', true], ['y = 2t+1', 'y = 2x+1', false], ['y(x) = 2x+1', 'y = 2x+1', true],
  ['f^{-1}(x) = \\frac{x-3}{2}', '\\frac{x-3}{2}', true], ['x^2 + y^2 = 25', 'y^2 = 25 - x^2', true],
  // A labelled ratio against the bare ratio; ratios of three or more parts compare up to a common factor.
  ['V_1:V_2=11:21', '11:21', true], ['V_1 : V_2 = 11 : 21', '\\frac{11}{21}', true], ['AB:BC = 2:3', '2:3', true],
  ['V_1:V_2=11:21', '21:11', false], ['2:4:6', '1:2:3', true], ['a:b:c = 1:2:3', '1:2:3', true], ['1:2:3', '1:3:2', false],
  ['\\frac{V_1}{V_2} = \\frac{11}{21}', '11:21', true],
];

const STRUCTURES: Case[] = [
  // A column vector is the tuple of its entries; a row vector is a 1 x n matrix (kept apart, as before).
  ['\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}', '(1,2,3)', true], ['(1,2,3)', '\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}', true],
  ['\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}', '(1,3,2)', false], ['\\begin{pmatrix}1\\\\2\\end{pmatrix}', '(1,2,3)', false],
  ['\\langle 1, 2\\rangle', '\\begin{pmatrix}1\\\\2\\end{pmatrix}', true], ['\\begin{pmatrix}\\frac12\\\\-1\\end{pmatrix}', '(0.5, -1)', true],
  // A matrix against an expression that evaluates to the same matrix.
  ['\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}+\\begin{pmatrix}0&2\\\\3&3\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', true],
  ['\\begin{pmatrix}-2&1\\\\\\frac32&-\\frac12\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^{-1}', true],
  ['\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^T', true],
  ['\\begin{pmatrix}7&10\\\\15&22\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^2', true],
  ['\\begin{pmatrix}7&10\\\\15&23\\end{pmatrix}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^2', false],
  ['\\begin{pmatrix}1\\\\2\\end{pmatrix}\\cdot 3', '\\begin{pmatrix}3\\\\6\\end{pmatrix}', true],
  ['\\begin{pmatrix}x\\\\2x\\end{pmatrix}', 'x\\begin{pmatrix}1\\\\2\\end{pmatrix}', true],
  ['\\begin{pmatrix}2&1\\\\1&2\\end{pmatrix}\\begin{pmatrix}1\\\\1\\end{pmatrix}', '\\begin{pmatrix}3\\\\3\\end{pmatrix}', true],
  ['-\\begin{pmatrix}1\\\\-2\\end{pmatrix}', '\\begin{pmatrix}-1\\\\2\\end{pmatrix}', true],
  ['\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^{-1}', '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}', false],
  // A list of values (eigenvalues, roots) in square brackets is a list, not an interval, when the gold is a list.
  ['[1, 6]', '1, 6', true], ['[6, 1]', '1, 6', true], ['[1, 6]', '\\{1, 6\\}', true], ['[1, 6]', '1, 7', false],
  ['[-2, 3]', '-2, 3', true], ['[1, 2, 3]', '1, 2, 3', true], ['[1, 6]', '[1, 6)', false], ['[1, 6]', '6', false],
  ['1, 6', '[1, 6]', false],
];

const NUMBERS: Case[] = [
  // Six or more significant digits, correctly rounded or truncated, against an exact non-integer gold.
  ['0.034965', '\\frac{5}{143}', false], ['0.0349650', '\\frac{5}{143}', true], ['0.210938', '\\frac{27}{128}', true],
  ['0.0208333', '\\frac{1}{48}', true], ['0.020833', '\\frac{1}{48}', false], ['0.142857', '\\frac17', true], ['0.142858', '\\frac17', false], ['0.666667', '\\frac23', true],
  ['0.666666', '\\frac23', true], ['0.666', '\\frac23', false], ['-0.428571', '-\\frac37', true], ['2.33333', '\\frac73', true],
  ['3.142857', '\\frac{22}{7}', true], ['3.142857', '\\pi', false], ['3.999999', '4', false], ['4.000000', '4', true],
  ['0.3333333333', '\\frac13', true], ['0.3333433333', '\\frac13', false],
  // Number words.
  ['2.5 \\text{ million}', '2500000', true], ['2.5 million', '2,500,000', true], ['3 \\text{ billion}', '3 \\times 10^9', true],
  ['2.5 \\text{ million}', '2.5', false], ['\\text{three}', '3', true], ['\\text{twenty-one}', '21', true], ['\\text{three}', '4', false],
  ['1.2 \\text{ thousand}', '1200', true], ['\\text{one hundred}', '100', true], ['\\$2.5 \\text{ million}', '2500000', true],
  // Scientific notation against a long integer.
  ['6.02 \\times 10^{23}', '602000000000000000000000', true], ['6.02 \\times 10^{23}', '602000000000000000000001', false],
  ['1.23 \\cdot 10^{-5}', '0.0000123', true], ['1.2E+25', '12000000000000000000000000', true],
  ['12,000,000,000,000,000,000,000,000', '1.2 \\times 10^{25}', true], ['1.2345678901234567891\\times10^{30}', '1234567890123456789100000000000', true],
  ['2^10', '1024', true], ['2^10', '0', false],
  // Complex numbers in polar / exponential form against a+bi.
  ['2e^{i\\pi/3}', '1+\\sqrt{3}i', true], ['\\sqrt{2}e^{i\\pi/4}', '1+i', true], ['\\sqrt{2}\\left(\\cos\\frac{\\pi}{4}+i\\sin\\frac{\\pi}{4}\\right)', '1+i', true],
  ['2\\operatorname{cis}(60^\\circ)', '1+i\\sqrt{3}', true], ['2(\\cos 60^\\circ + i \\sin 60^\\circ)', '1+\\sqrt3 i', true],
  ['2e^{i\\pi/3}', '1-\\sqrt{3}i', false], ['(1+i)^2', '2i', true], ['\\frac{1}{i}', '-i', true], ['i^2', '-1', true],
  ['5e^{i\\arctan(4/3)}', '3+4i', true], ['2e^{\\frac{\\pi}{3}i}', '1+\\sqrt3 i', true], ['e^{i\\pi}', '-1', false],
  ['2\\text{cis}\\frac{\\pi}{2}', '2i', true], ['\\sqrt{2}e^{-i\\pi/4}', '1+i', false],
];

const EXTRACTION: Case[] = [
  // A box holding a chain of equal values, or a short phrase around one value.
  ['20 + 25 + 70 + 60 = 175', '175', true], ['20 + 25 + 70 + 60 = 175', '176', false], ['2+2=5', '5', false],
  ['\\frac{1}{2}\\cdot 10 = 5', '5', true], ['3 \\times 4 = 12 \\text{ apples}', '12', true], ['x = 3\\cdot 4 = 12', '12', true],
  ['5+5 = 10 = 11', '11', false], ['\\sqrt{2} \\approx 1.414', '\\sqrt{2}', true], ['6 \\div 2 = 3', '3', true],
  ['\\text{Each person gets } 14 \\text{ slices}', '14', true], ['\\text{The total is } 36', '36', true],
  ['\\text{between 3 and 6}', '3', false], ['\\text{at least } 5', '5', false], ['\\text{not } 5', '5', false],
  ['\\text{about 3 or 4}', '3', false], ['\\text{No solution}', '0', false], ['\\text{He has } 5 \\text{ apples and } 3 \\text{ pears}', '5', false],
  // An option written `c)`.
  ['c)', 'C', true], ['c)', '(C)', true], ['C)', 'C', true], ['c) 12', 'C', true], ['b)', 'C', false], ['\\text{Option C}', 'C', true],
  ['\\text{(C) and (D)}', 'C', false],
];

const HEDGES: Case[] = [
  ['x = 3 \\\\ x = 6', '6', false], ['x = 3 \\\\ x = 6', '3', false], ['3 \\\\ 6', '6', false], ['x=3 \\quad x=6', '6', false],
  ['x=3, \\; x=6', '6', false], ['3 \\; 6', '6', false], ['3~6', '36', false], ['3 \\ 6', '36', false], ['3 6', '36', false],
  ['x = 3 \\text{ or } x = 6', '6', false], ['x=3 \\lor x=6', '6', false], ['x=3 \\vee x=6', '3', false],
  ['\\begin{cases} x = 3 \\\\ x = 6 \\end{cases}', '6', false], ['\\begin{aligned} x &= 3 \\\\ x &= 6 \\end{aligned}', '6', false],
  ['x = 3 \\newline x = 6', '6', false], ['3 \\text{ (or } 6)', '6', false], ['x \\in \\{3, 6\\}', '6', false],
  ['x = 3\nx = 6', '6', false], ['x = 6 \\\\ x = 6', '6', true], ['x=3 \\\\ y=6', 'x=3, y=6', true], ['6 \\\\ 6', '6', true],
  ['3 \\mp 6', '-3', false], ['\\begin{array}{c} 3 \\\\ 6 \\end{array}', '6', false], ['x=6, x=3', '6', false],
  ['3 \\text{ and } 6', '36', false], ['3.6', '36', false], ['3, 6', '36', false], ['3{,}6', '36', false],
];

const PLAIN_TEXT_GOLDS: Case[] = [
  ['\\frac{\\sqrt{2}}{2}', '1/sqrt(2)', true], ['\\frac{\\sqrt{3}}{2}', 'sqrt(3)/2', true], ['2\\sqrt{3}', '2*sqrt(3)', true],
  ['x^{2}+1', 'x**2 + 1', true], ['\\frac{3\\pi}{4}', '3*pi/4', true], ['e^{2}', 'exp(2)', true], ['\\ln 2', 'log(2)', true],
  ['\\infty', 'oo', true], ['2^{10}', '2**10', true], ['1024', '2^10', true], ['\\sqrt{2}', 'sqrt(3)', false], ['-20x', '-20*x', true],
  ['3+2i', '3 + 2*I', true], ['\\sin x', 'sin(x)', true], ['\\sqrt[3]{2}', '2**(1/3)', true], ['\\frac{x}{2}', 'x/2', true],
  ['\\frac{1}{\\sqrt{2}}', 'sqrt(2)/2', true], ['\\pi', 'pi', true], ['2\\pi', 'pi', false], ['x^2-2x+1', '(x - 1)**2', true],
  ['\\frac{\\sqrt{2}}{2}', '0.7071', false], ['\\sqrt{2}', 'sqrt(2.0)', true], ['5', '5.0', true], ['-3', '-3', true],
];

describe.each([
  ['relations', RELATIONS],
  ['structures', STRUCTURES],
  ['numbers', NUMBERS],
  ['extraction', EXTRACTION],
  ['hedges', HEDGES],
  ['plain-text golds', PLAIN_TEXT_GOLDS],
] as const)('%s', (_kind, cases) => {
  it.each(cases)('%s vs %s -> %s', (pred, gold, expected) => {
    const v = grade(`The final answer is $\\boxed{${pred}}$.`, gold);
    expect(v.correct, `rule=${v.rule} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(expected);
    if (v.correct) expect(v.rule).not.toMatch(/^(hedged|gold_unparsed|fail_closed|no_answer)$/);
  });
});

/** More unseen cases across the kinds of grading-cases.jsonl (integers to choices), all must be right. */
const ACROSS_KINDS: Case[] = [
  [' 42 ', '42', true], ['-0', '0', true], ['4\\,2', '42', false], ['\\frac{-3}{4}', '-\\frac34', true], ['3/4', '\\frac{3}{4}', true], ['\\frac{6}{8}', '\\frac34', true],
  ['.5', '0.5', true], ['1.', '1', true], ['50 \\%', '50', true], ['50 percent', '50\\%', true], ['5\\text{ cm}', '5\\text{ m}', false], ['\\text{Tuesday}', 'Tuesday', true],
  ['\\textbf{(B)}', 'B', true], ['(b)', 'B', true], ['B.', 'B', true], ['\\{1, 2, 3\\}', '1,2,3', true], ['\\{-1, 1\\}', '\\pm 1', true], ['x = \\pm 1', '-1, 1', true],
  ['(1,2,3)', '\\langle 1,2,3 \\rangle', true], ['(2,\\infty)', 'x > 2', true], ['[2, \\infty)', 'x\\ge2', true], ['(-\\infty, 1) \\cup (1, \\infty)', 'x \\neq 1', true],
  ['\\sqrt{50}', '5\\sqrt2', true], ['\\frac{\\sqrt{6}}{3}', '\\sqrt{\\frac{2}{3}}', true], ['2^{1/2}', '\\sqrt2', true], ['\\sqrt[3]{27}', '3', true],
  ['x^2-1', '(x-1)(x+1)', true], ['\\frac{1}{x-1}-\\frac{1}{x+1}', '\\frac{2}{x^2-1}', true], ['3.0 \\times 10^8', '300000000', true], ['3e8', '3\\times 10^8', true],
  ['\\frac{1+i}{2}', '\\frac12 + \\frac{i}{2}', true], ['007', '7', true], ['x = 2 \\text{ or } x = -2', '\\pm 2', true], ['\\text{(C)}', '\\text{(C)}', true],
  ['\\frac{\\sqrt{3}}{3}', '\\frac{1}{\\sqrt3}', true], ['\\dfrac{1}{2}', '0.5', true], ['-\\frac{\\sqrt{2}}{2}', '-\\frac{1}{\\sqrt{2}}', true],
  ['(3, 4)', '(4, 3)', false], ['\\{3, 4\\}', '\\{4, 3\\}', true], ['4, 3', '(3, 4)', false], ['x=3, y=4', '(3, 4)', true], ['y=4, x=3', '(3, 4)', false],
  ['\\$1,234.50', '1234.5', true], ['1,234.5', '1234.5', true], ['1.2345 \\times 10^{3}', '1234.5', true], ['12{,}345', '12345', true],
  ['\\frac{5}{2}\\text{ hours}', '2.5', true], ['2\\frac12', '\\frac52', true], ['x^{2}+2x+1', '(x+1)^2', true], ['\\sin^2 x + \\cos^2 x', '1', true],
  ['\\boxed{5}', '5', true], ['5 \\text{ or } 5', '5', true], ['\\infty', '\\infty', true], ['-\\infty', '-\\infty', true],
  ['\\pi/2', '\\frac{\\pi}{2}', true], ['\\frac{\\pi}{2}', '1.5708', false], ['1.570796', '\\frac{\\pi}{2}', true], ['3\\sqrt{3}/2', '\\frac{3\\sqrt3}{2}', true],
  ['\\frac{a}{b}', 'a/b', true], ['k=3', 'k = 3', true], ['\\theta = \\frac{\\pi}{3}', '\\frac{\\pi}{3}', true], ['f(x) = 2x', '2x', true],
  ['\\begin{pmatrix}1\\\\2\\end{pmatrix}', '\\begin{pmatrix}1\\\\2\\end{pmatrix}', true], ['\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}', '(1, 2)', true],
  ['\\mathbb{R}', '(-\\infty, \\infty)', true], ['\\varnothing', '\\emptyset', true], ['\\{\\}', '\\emptyset', true],
  ['10\\%', '0.1', true], ['0.1', '10\\%', true], ['10', '0.1', false], ['\\frac{1}{10}', '10\\%', true],
  ['\\text{No}', '\\text{no}', true], ['\\text{yes}', 'Yes', true], ['True', '\\text{True}', true], ['\\text{False}', 'True', false],
  ['6\\sqrt{2}', '\\sqrt{72}', true], ['\\log_{3} 9', '2', true], ['\\ln e^3', '3', true], ['e^{\\ln 2}', '2', true], ['\\log 100', '2', true],
  ['\\binom{6}{3}', '20', true], ['6!/(3!3!)', '20', true], ['\\frac{6!}{3!\\,3!}', '20', true], ['20.0', '20', true], ['20.5', '20', false],
  ['2^{10}-1', '1023', true], ['(-1)^{100}', '1', true], ['0.\\overline{3}', '\\frac13', true], ['0.\\overline{142857}', '\\frac17', true],
  ['\\sqrt{2}+\\sqrt{8}', '3\\sqrt{2}', true], ['\\frac{2}{\\sqrt{2}}', '\\sqrt{2}', true], ['(\\sqrt{2}+1)(\\sqrt{2}-1)', '1', true],
  ['\\sqrt{3}^4', '9', true], ['\\frac{\\sqrt{12}}{\\sqrt{3}}', '2', true], ['\\sqrt{2}\\sqrt{8}', '4', true], ['(1+\\sqrt{2})^2', '3+2\\sqrt{2}', true],

  ['y = -\\frac{1}{2}x + 3', 'x + 2y = 6', true], ['f(x) = 3x+2', 'y = 3x + 2', true], ['2 < x \\leq 5', 'x \\in (2, 5]', true], ['3x - 2y = 6', '-3x + 2y = -6', true],
  ['y = x^2', 'x^2 = y', true], ['-2 \\geq x', 'x \\leq -2', true], ['x>-1', '-x<1', true], ['k(x) = 2x', 'f(x) = 2x', true], ['1 \\le x \\le 3', '[1,3]', true],
  ['\\frac{1+\\sqrt5}{2}', '(1+sqrt(5))/2', true], ['\\frac{\\pi}{2}', '1/2*pi', true], ['\\infty', 'inf', true], ['\\infty', 'infinity', true], ['0.001', '1e-3', true],
  ['\\frac13', 'Rational(1, 3)', true], ['\\sqrt{2}i', 'sqrt(2)*I', true], ['\\{1, 2\\}', '{1, 2}', true], ['-\\infty', '-oo', true],
];

describe('across the kinds', () => {
  it.each(ACROSS_KINDS)('%s vs %s -> %s', (pred, gold, expected) => {
    const v = grade(`The final answer is $\\boxed{${pred}}$.`, gold);
    expect(v.correct, `rule=${v.rule} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(expected);
  });
  it.each([
  ['So the final answer is 42.', '42', true], ['Thus the answer is: $42$', '42', true], ['Therefore, the answer is $\\$42$.', '42', true], ['Hence, the answer is 42 cm.', '42', true],
  ['The answer is (B).', 'B', true], ['the answer is 1/2', '\\frac12', true], ['The answer is $x=5$.', '5', true], ['The correct answer is 42.', '42', true], ['**Answer:** 42', '42', true],
  ['The answer is therefore 42.', '42', true], ['The answer is four.', '4', true], ['The answer is 42 or 43.', '42', false], ['The answer is not 42.', '42', false],
  ['Final answer: 3.5 million', '3500000', true], ['The answer is 42\nbut wait, it is 43', '42', true],
] as [string, string, boolean][])('fallback %j vs %s -> %s', (response, gold, expected) => {
    expect(grade(response, gold).correct).toBe(expected);
  });
});

describe('no false positive on an integer gold', () => {
  /** Hedges, approximations, ranges and near misses of 36: only the values equal to 36 pass. */
  const EQUAL = new Set(['36 + 0i', '36e0', '36\\%', '3600\\%', 'thirty-six', '\\frac{36}{1}', '36.', '36 \\text{ (exactly)}', '6^2', '2^{2}\\cdot 3^{2}']);
  it.each(['3 6', '3,6', '3.6', '35.999999999', '\\approx 36', '36 \\pm 1', '36 \\text{ or } 37', '36 (or 37)', '\\text{36, but possibly 37}', '36 \\\\ 37', 'x = 36 \\text{ and } y = 37',
 '36.0000000001', '36!', '36 \\text{ (or } 37)', '36/37', '36:37', '[36, 37]', '(36, 37)', '36 - 37', '37 \\text{ (not 36)}', '\\text{not } 36', '36 \\neq 37', 'x \\ne 36', '36^{2}', '360', '036.1',
 'x = 37 = 36', '36 = 37', '\\text{36 or 37}', '\\text{either 36 or 37}', '36 \\lor 37', '\\{36, 37\\}', 'x \\in \\{36, 37\\}', '36 \\; 37', '36\\quad 37', '36\\qquad37', '36~37', '36 \\, 37', '36\\;\\text{or}\\;37',
 '\\begin{cases}36\\\\37\\end{cases}', '\\begin{array}{c}36\\\\37\\end{array}', '\\begin{aligned}x&=36\\\\x&=37\\end{aligned}', '36 \\newline 37', '36\n37', '\\text{36}\\text{37}', '36^{\\circ} \\text{ or } 37^{\\circ}',
 '\\mathbf{36}, \\mathbf{37}', '36 \\text{ to } 37', '36-37', 'between 36 and 37', '\\text{at most } 36', '\\le 36', 'x \\le 36', '\\sqrt{1296}+\\epsilon', '36 + 0i', '36 + i', '36e0', '36\\%', '3600\\%', '0.36', 'thirty-six', 'thirty seven',
 '36 \\text{ million}', '\\frac{36}{1}', '36.', '36 \\text{ (exactly)}', '36 \\text{ approx.}', '36.4', '\\lceil 35.2 \\rceil', '6^2', '2^{2}\\cdot 3^{2}'])('%j against 36', (pred) => {
    const v = grade(`The final answer is $\\boxed{${pred}}$.`, '36');
    expect(v.correct, `rule=${v.rule} pred=${v.normalizedPrediction}`).toBe(EQUAL.has(pred));
  });
});

describe('extraction from whole responses', () => {
  it.each([
    ['So $x = \\boxed{3}$ and $y = \\boxed{5}$.', '(3, 5)', true],
    ['So $x = \\boxed{3}$ and $y = \\boxed{5}$.', 'x=3, y=5', true],
    ['So $x = \\boxed{3}$ and $y = \\boxed{5}$.', '(5, 3)', false],
    ['The width is $\\boxed{3}$ cm and the length is $\\boxed{5}$ cm.', '3, 5', false],
    ['First I got \\boxed{3}. Wait, that is wrong; the answer is \\boxed{5}.', '5', true],
    ['It is $\\boxed{3}$ or maybe $\\boxed{6}$.', '6', false],
    ['Either $\\boxed{3}$ or $\\boxed{6}$.', '3', false],
    ['Therefore, the answer is 18.', '18', true],
    ['So the answer is $18$.', '18', true],
    ['The answer is: **18**', '18', true],
    ['Thus, the final answer is 42 dollars.', '42', true],
    ['The answer is 18, which is the number of eggs.', '18', true],
    ['The answer is \\(\\frac{1}{2}\\).', '\\frac12', true],
    ['I think the answer is 18 but maybe 20.', '18', false],
    ['the answer is 5 or 6', '5', false],
    ['We get 16 - 3 - 4 = 9, so 9 * 2 = 18 dollars in total.', '18', false],
    ['The answer is c) 12.', 'C', true],
  ] as const)('%j vs %s -> %s', (response, gold, expected) => {
    const v = grade(response, gold);
    expect(v.correct, `rule=${v.rule} extracted=${v.extracted} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(expected);
  });
});

describe('a gold that does not parse is reported, never silently false', () => {
  it.each(['\\frac{1}{', '@@##', '\\sqrt{2', '1/sqrt(2'])('gold %j -> rule gold_unparsed', (gold) => {
    const v = grade('\\boxed{5}', gold);
    expect(v).toMatchObject({ correct: false, rule: 'gold_unparsed' });
  });
  it('an empty gold is unparsed too', () => {
    expect(grade('\\boxed{5}', '  ')).toMatchObject({ correct: false, rule: 'gold_unparsed' });
  });
});

describe('problem-aware mode', () => {
  const cases: [string, string, string, boolean, boolean][] = [
    // [problem, answer in a box, gold, expected with the problem, expected without it]
    ['What is 3/11? Express your answer as a decimal to the nearest hundredth.', '0.27', '\\frac{3}{11}', true, false],
    ['What is 3/11? Express your answer as a decimal to the nearest hundredth.', '0.28', '\\frac{3}{11}', false, false],
    ['What is 3/11? Express your answer as a decimal to the nearest hundredth.', '0.273', '\\frac{3}{11}', true, false],
    ['What is 3/11? Express your answer as a decimal to the nearest hundredth.', '0.3', '\\frac{3}{11}', false, false],
    ['Round your answer to the nearest thousandth.', '1.414', '\\sqrt{2}', true, false],
    ['Round your answer to the nearest thousandth.', '1.415', '\\sqrt{2}', false, false],
    ['Give the area to 2 decimal places.', '3.14', '\\pi', true, false],
    ['Give the answer to two decimal places.', '3.14', '\\pi', true, false],
    ['Express your answer as a decimal to the nearest tenth.', '4.47', '4.5', true, false],
    ['Express your answer as a decimal to the nearest tenth.', '4.4', '4.5', false, false],
    ['Express your answer as a decimal to the nearest hundredth.', '0.0273', '0.03', true, false],
    ['Round to the nearest integer.', '3.6', '4', false, false],
    ['Round to the nearest integer.', '4', '4', true, true],
    ['Give your answer to 3 significant figures.', '0.0123', '\\frac{1}{81}', true, false],
    ['Determine the root correct to two decimal places using the bisection method. Output format required: float', '1.79', '1.8', false, false],
    // A float answer asked for without a precision: agreement to the gold's own digits. Two decimals that
    // agree at the coarser precision when rounded pass without the problem too (rule `decimal_precision`);
    // one that agrees only when cut (`0.42957` for `0.4295`) needs the problem.
    ['Find the escape speed. (Unit: 10 ^ 4 m/s) Output format required: float', '1.118', '1.12', true, true],
    ['Compute the integral. Output format required: float', '0.429570457114761', '0.4295', true, false],
    ['Approximate the integral with Simpson rule. Output format required: float', '-2.472', '-2.47160136', true, true],
    ['Output format required: float', '439.17', '442.02', false, false],
    ['Output format required: float', '2.9999', '3', false, false],
    // Units named by the problem.
    ['How many minutes does the trip take?', '1.5 \\text{ hours}', '90', true, false],
    ['How many minutes does the trip take?', '90 \\text{ minutes}', '90', true, true],
    ['How long is the rope, in centimeters?', '2 \\text{ m}', '200', true, false],
    ['How long is the rope, in centimeters?', '2 \\text{ cm}', '200', false, false],
    ['Find the escape speed. (Unit: 10 ^ 4 m/s) Output format required: float', '11180 \\text{ m/s}', '1.118', true, false],
    ['Express your answer in radians.', '30^\\circ', '\\frac{\\pi}{6}', true, false],
    // Options listed in the problem.
    ['Which is the nearest to -0.3?  (a) p  (b) 0  (c) j', '\\text{(b)}', '0', true, false],
    ['Which is the closest to 1/3?  (a) z  (b) -1  (c) -7', '\\text{(b)}', '0.0', false, false],
    ['What is 2+2? (A) 3 (B) 4 (C) 5', '4', 'B', true, false],
    ['What is 2+2? (A) 3 (B) 4 (C) 5', '5', 'B', false, false],
    // The unknown the problem asks for, among several labelled values.
    ['Solve -2*d - 7 = -3*i, -4*i + 13 = 15*d - 2*d - 12*d for i.', 'd = 1, i = 3', '3', true, false],
    ['Solve -2*d - 7 = -3*i, -4*i + 13 = 15*d - 2*d - 12*d for i.', 'd = 3, i = 1', '3', false, false],
    // Order asked for by the problem.
    ['Find the rank for lambda=sqrt(5) and lambda=1 separately. Return the answer as a list.', '[2, 3]', '3, 2', false, true],
    ['Find the rank for lambda=sqrt(5) and lambda=1 separately. Return the answer as a list.', '[3, 2]', '3, 2', true, true],
    ['For matrix A = [[5, 4], [1, 2]], what are its eigen values?', '[6, 1]', '1, 6', true, true],
  ];
  it.each(cases)('%s | %s vs %s -> %s (without the problem: %s)', (problem, pred, gold, withProblem, without) => {
    const response = `The final answer is $\\boxed{${pred}}$.`;
    const v = grade(response, gold, { problem });
    expect(v.correct, `rule=${v.rule} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(withProblem);
    expect(grade(response, gold).correct).toBe(without);
  });
  it('takes several boxes as one answer only when the problem asks for several unknowns', () => {
    const problem = 'A rectangle has area 15 and perimeter 16. Find its width and its length.';
    const answer = 'The width is $\\boxed{3}$ cm and the length is $\\boxed{5}$ cm.';
    expect(grade(answer, '3, 5', { problem })).toMatchObject({ correct: true, rule: 'multi_box' });
    expect(grade(answer, '(3, 5)', { problem })).toMatchObject({ correct: true, rule: 'multi_box' });
    expect(grade(answer, '3, 5').correct).toBe(false);
    expect(grade('First I got \\boxed{3}. Wait, that is wrong; the answer is \\boxed{5}.', '3, 5', { problem }).correct).toBe(false);
    expect(grade('$\\boxed{3}$ ++++++ $\\boxed{5}$', '3, 5', { problem }).correct).toBe(false);
    expect(grade('$\\boxed{3}$ no no no $\\boxed{5}$', '3, 5', { problem }).correct).toBe(false);
  });
  it('reads a bare sentence answer with the problem: numbers the problem states are not the answer', () => {
    const problem = 'Jim spends 2 hours watching TV and then reads for half as long. He does this 3 times a week. How many hours does he spend on TV and reading in 4 weeks?';
    const answer = 'Jim spends a total of 36 hours on TV and reading in 4 weeks.';
    expect(grade(answer, '36', { extract: false, problem })).toMatchObject({ correct: true });
    expect(grade(answer, '4', { extract: false, problem }).correct).toBe(false);
    expect(grade(answer, '36', { extract: false }).correct).toBe(false);
    expect(grade('Each person can have 14 slices.', '14', { extract: false }).correct).toBe(true);
  });
});
