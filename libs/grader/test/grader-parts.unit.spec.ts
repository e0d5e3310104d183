import { describe, expect, it } from 'vitest';
import { plainTextToLatex, problemHints } from '../src';
import { approximateDecimal, decimalLiteral, roundDecimals, truncateDecimals } from '../src/decimal.approximation';
import { evaluate, parseLatex } from '../src/expression.evaluator';
import { evaluateMatrixExpression } from '../src/matrix.evaluator';
import { replaceNumberWords } from '../src/number-words';
import { Rational } from '../src/rational';
import { surdsEqual } from '../src/surd.evaluator';
import { conversionFactor, parseUnit } from '../src/units';

const q = (s: string) => Rational.parseDecimal(s) as Rational;

describe('problemHints (problem-aware mode)', () => {
  it('reads the precision asked for', () => {
    expect(problemHints('Express your answer as a decimal to the nearest hundredth.')).toMatchObject({ decimals: 2 });
    expect(problemHints('Round to the nearest ten-thousandth.')).toMatchObject({ decimals: 4 });
    expect(problemHints('Round your answer to the nearest whole number.')).toMatchObject({ decimals: 0 });
    expect(problemHints('Give the answer to three decimal places.')).toMatchObject({ decimals: 3 });
    expect(problemHints('to the nearest cent')).toMatchObject({ decimals: 2 });
    expect(problemHints('Give 4 significant figures.')).toMatchObject({ significantFigures: 4 });
    expect(problemHints('Output format required: float')).toMatchObject({ approximate: true });
    expect(problemHints('What is 2+2?').decimals).toBeUndefined();
  });
  it('reads the unit asked for, with a power-of-ten scale', () => {
    expect(problemHints('How many minutes does it take?').unit).toMatchObject({ dims: { T: 1 } });
    const u = problemHints('Find the speed. (Unit: 10 ^ 4 m/s)').unit!;
    expect(u.dims).toEqual({ L: 1, T: -1 });
    expect(u.factor.equals(new Rational(10000n))).toBe(true);
    expect(problemHints('How long is it, in centimeters?').unit?.factor.equals(q('0.01'))).toBe(true);
    expect(problemHints('How many people came?').unit).toBeUndefined();
    expect(problemHints('Express your answer in radians.').angle).toBe('radians');
  });
  it('reads options, order, the unknown asked for and defined constants', () => {
    expect([...problemHints('Which is biggest?  (a) z  (b) -1  (c) -7').choices!]).toEqual([['A', 'z'], ['B', '-1'], ['C', '-7']]);
    expect([...problemHints('Options: a ) $2\\theta$ , b ) $\\theta^2$. Output format required: option.').choices!.keys()]).toEqual(['A', 'B']);
    expect(problemHints('Let f(x) = (x + a)(x + b).').choices).toBeUndefined();
    expect(problemHints('Give the ranks for the two values separately.').ordered).toBe(true);
    expect(problemHints('Solve 2*d - 7 = -3*i, 4*i = 15*d for i.').askedVariable).toBe('i');
    expect(problemHints('Find x.').askedVariable).toBe('x');
    const d = problemHints('Let s be 207*-3*(-1)/12. Let j = 52 - s. Let c(x) = 2*x. Which is bigger: -1 or j?').definitions!;
    expect(d.get('s')).toBe('207/4');
    expect(d.get('j')).toBe('1/4');
    expect(d.has('c')).toBe(false);
    expect(problemHints('Find its width and its length.').severalUnknowns).toBe(true);
    expect(problemHints('Find its width.').severalUnknowns).toBeUndefined();
  });
});

describe('units', () => {
  it('converts exactly between units of one kind', () => {
    expect(conversionFactor(parseUnit('hours')!, parseUnit('minutes')!).equals(new Rational(60n))).toBe(true);
    expect(conversionFactor(parseUnit('square feet')!, parseUnit('in^2')!).equals(new Rational(144n))).toBe(true);
    expect(conversionFactor(parseUnit('km per hour')!, parseUnit('m/s')!).equals(new Rational(5n, 18n))).toBe(true);
    expect(parseUnit('apples')).toBeNull();
  });
});

describe('plainTextToLatex', () => {
  it('converts Python/sympy text and leaves LaTeX and bare values alone', () => {
    expect(plainTextToLatex('1/sqrt(2)')).toBe('\\frac{1}{\\sqrt{2}}');
    expect(plainTextToLatex('-x**2 + 3*pi')).toBe('-{x}^{2} + 3 \\cdot \\pi');
    expect(plainTextToLatex('log(x, 2)')).toBe('\\log_{2}\\left(x\\right)');
    expect(plainTextToLatex('2^10')).toBe('{2}^{10}');
    expect(plainTextToLatex('\\frac{1}{2}')).toBeNull();
    expect(plainTextToLatex('12')).toBeNull();
    expect(plainTextToLatex('sqrt(2')).toBeNull();
  });
});

describe('number words', () => {
  it('turns scale words and spelled-out whole numbers into digits', () => {
    expect(replaceNumberWords('2.5 million')).toBe('2500000');
    expect(replaceNumberWords('1,200 thousand')).toBe('1200000');
    expect(replaceNumberWords('one hundred five')).toBe('105');
    expect(replaceNumberWords('twenty-one apples')).toBe('21 apples');
    expect(replaceNumberWords('minus four')).toBe('-4');
    expect(replaceNumberWords('no one knows')).toBe('no one knows');
  });
});

describe('decimal approximations', () => {
  it('reads literals and rounds halves away from zero, exactly', () => {
    expect(decimalLiteral('-0.0340')).toMatchObject({ decimals: 4, significant: 3 });
    expect(roundDecimals(q('2.345'), 2).equals(q('2.35'))).toBe(true);
    expect(roundDecimals(q('-2.345'), 2).equals(q('-2.35'))).toBe(true);
    expect(truncateDecimals(q('2.349'), 2).equals(q('2.34'))).toBe(true);
  });
  it('never passes an integer gold by tolerance, whatever the problem says', () => {
    const gold = evaluate(parseLatex('4'));
    for (const hints of [{ decimals: 0 }, { approximate: true }, { significantFigures: 1 }, undefined])
      expect(approximateDecimal(decimalLiteral('3.9999999')!, gold, decimalLiteral('4'), hints)).toBeNull();
  });
});

describe('exact radicals and matrices', () => {
  it('decides radical identities exactly', () => {
    expect(surdsEqual(parseLatex('(\\sqrt{2}+1)(\\sqrt{2}-1)'), parseLatex('1'))).toBe(true);
    expect(surdsEqual(parseLatex('\\frac{1}{3-\\sqrt{2}}'), parseLatex('\\frac{3+\\sqrt{2}}{7}'))).toBe(true);
    expect(surdsEqual(parseLatex('\\sqrt{9.0000001}'), parseLatex('3'))).toBe(false);
    expect(surdsEqual(parseLatex('\\pi'), parseLatex('3'))).toBeNull();
  });
  it('evaluates matrix expressions', () => {
    const m = evaluateMatrixExpression(parseLatex('\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}^{-1}'));
    expect(m.kind === 'matrix' && m.rows.map((r) => r.map((v) => v.exact!.toString()))).toEqual([['-2', '1'], ['3/2', '-1/2']]);
    expect(() => evaluateMatrixExpression(parseLatex('\\begin{pmatrix}1&2\\end{pmatrix}+\\begin{pmatrix}1\\\\2\\end{pmatrix}'))).toThrow(/shapes differ/);
  });
});

describe('problemHints reads what the question asks, not the setup', () => {
  it('ignores a precision, an approximation or a unit mentioned in the setup', () => {
    const setup = 'A rope was measured to the nearest tenth of a metre. It is approximately 3 metres long, in meters. Two friends share it. One takes a third. What fraction of the rope is left? Express your answer as a common fraction.';
    const h = problemHints(setup);
    expect(h.decimals).toBeUndefined();
    expect(h.approximate).toBeUndefined();
    expect(h.unit).toBeUndefined();
    expect(problemHints('A long story. Another sentence. Yet another. Output format required: float').approximate).toBe(true);
  });
});
