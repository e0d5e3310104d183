import { describe, expect, it } from 'vitest';
import { extractAnswer, grade, gradeAsync, GraderError, normalizeLatex, type SymbolicBackend } from '../src';

/** Unseen cases of the kinds in grading-cases.jsonl: [prediction in a box, gold, expected]. */
const CASES: [string, string, boolean][] = [
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

const MORE_CASES: [string, string, boolean][] = [
  ['0.28\\%', '28\\%', false], ['2800\\%', '28', true], ['28\\%', '28', true], ['0.28', '28', false],
  // Near-integers: an integer gold never passes by tolerance.
  ['e^{\\pi\\sqrt{163}}', '262537412640768744', false], ['\\sqrt{9+10^{-30}}', '3', false],
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
  ['\\sqrt{2}', '1.41421356', true], ['1.41421356', '1.41421356', true], ['1.4142', '1.41421356', true], ['1.4143', '1.41421356', false],
  ['\\frac{22}{7}', '3.142857', false], ['0.1', '\\frac{1}{10}', true], ['\\dfrac{\\sqrt{5}-1}{2}', '\\frac{-1+\\sqrt5}{2}', true],
  ['\\frac{1}{2}\\sqrt{2}', '\\frac{\\sqrt{2}}{2}', true], ['\\sqrt{2}+\\sqrt{3}', '\\sqrt{5+2\\sqrt6}', true], ['\\sqrt{2}+\\sqrt{3}', '\\sqrt5', false],
  ['\\log_{2} 3', '\\frac{\\ln 3}{\\ln 2}', true], ['e', 'e^1', true], ['e^{i\\pi}', '-1', false],
  ['\\binom{10}{3}', '120', true], ['\\frac{10!}{3!7!}', '120', true], ['10^{-30}', '0', false], ['0', '10^{-30}', false],
  ['\\infty', '+\\infty', true], ['\\text{undefined}', '\\text{undefined}', true], ['\\text{none}', '0', false],
];

describe('grade: rules on unseen cases of each kind', () => {
  it.each([...CASES, ...MORE_CASES])('%s vs %s -> %s', (pred, gold, expected) => {
    const v = grade(`The answer is $\\boxed{${pred}}$.`, gold);
    expect(v.correct, `rule=${v.rule} pred=${v.normalizedPrediction} gold=${v.normalizedGold}`).toBe(expected);
  });
});

describe('extractAnswer (rule 1)', () => {
  it('takes the last balanced box after </think>, inside <answer>, and joins boxes separated by commas', () => {
    expect(extractAnswer('<think>\\boxed{1}</think> so \\boxed{2}')).toBe('2');
    expect(extractAnswer('<answer>\\boxed{7}</answer> trailing \\boxed{9}')).toBe('7');
    expect(extractAnswer('$\\boxed{1}$, $\\boxed{2}$ and $\\boxed{3}$')).toBe('1, 2, 3');
    expect(extractAnswer('so \\boxed 5.')).toBe('5');
    expect(extractAnswer('\\boxed{\\frac{1}{2}}')).toBe('\\frac{1}{2}');
  });
  it('returns null for no box and no marker, an empty box, an unbalanced box', () => {
    expect(extractAnswer('the total is 18 eggs')).toBeNull();
    expect(extractAnswer('\\boxed{}')).toBeNull();
    expect(extractAnswer('\\boxed{3')).toBeNull();
    expect(extractAnswer('')).toBeNull();
  });
  it('uses the last explicit marker when there is no box', () => {
    expect(extractAnswer('Answer: 4\nthen again\nFinal Answer: 5')).toBe('5');
    expect(extractAnswer('work\n#### 1,234')).toBe('1,234');
  });
});

describe('normalizeLatex (rule 2)', () => {
  it('strips wrappers, spacing, $ and flags percent and degrees', () => {
    expect(normalizeLatex('$\\left( \\dfrac{1}{2} \\right)$.').text).toBe('(\\frac{1}{2})');
    expect(normalizeLatex('28\\%')).toEqual({ text: '28', percent: true, degrees: false });
    expect(normalizeLatex('90^{\\circ}')).toEqual({ text: '90', percent: false, degrees: true });
    expect(normalizeLatex('10,\\!080').text).toBe('10080');
  });
});

describe('verdict fields and failure modes', () => {
  it('records extracted, normalised forms, rule and time', () => {
    const v = grade('so \\boxed{\\dfrac{2}{4}}', '\\frac12');
    expect(v).toMatchObject({ correct: true, extracted: '\\dfrac{2}{4}', normalizedPrediction: '\\frac{2}{4}', normalizedGold: '\\frac12', rule: 'numeric' });
    expect(v.ms).toBeGreaterThanOrEqual(0);
  });
  it('fails closed on no answer, an unparseable gold, and refuses huge powers', () => {
    expect(grade('no answer here', '5')).toMatchObject({ correct: false, rule: 'no_answer', extracted: null });
    expect(grade('\\boxed{5}', '\\ldots').correct).toBe(false);
    expect(grade('\\boxed{2003^{2002^{2001}}}', '1')).toMatchObject({ correct: false, rule: 'refused' });
  });
  it('throws a typed error naming the argument when an argument is not a string', () => {
    expect(() => grade(5 as unknown as string, '5')).toThrow(GraderError);
    expect(() => grade('\\boxed{5}', null as unknown as string)).toThrow(/gold/);
  });
});

describe('gradeAsync with a SymbolicBackend', () => {
  it('sends undecided expression checks to the backend and records rule sympy', async () => {
    const seen: string[] = [];
    const backend: SymbolicBackend = { check: async (p, g) => (seen.push(`${p} ? ${g}`), 'equal') };
    const v = await gradeAsync('\\boxed{\\sin(\\pi)}', '0', { symbolic: backend });
    expect(v).toMatchObject({ correct: true, rule: 'sympy' });
    expect(seen).toEqual(['sin(pi) ? Integer("0")']);
  });
  it('ends a check that does not answer in time as false with rule timeout', async () => {
    const never: SymbolicBackend = { check: () => new Promise(() => undefined) };
    const v = await gradeAsync('\\boxed{2003^{2002^{2001}}}', '1', { symbolic: never, timeoutMs: 50 });
    expect(v).toMatchObject({ correct: false, rule: 'timeout' });
  });
  it('does not call the backend when the fast path decides', async () => {
    const backend: SymbolicBackend = { check: async () => { throw new Error('must not be called'); } };
    expect((await gradeAsync('\\boxed{12}', '12', { symbolic: backend })).correct).toBe(true);
  });
});
