import { GraderError } from './errors';
import { evaluate, type MathJson, type Value } from './expression.evaluator';
import { exactV, isZero, ONE, vAdd, vDiv, vMul, vSub, ZERO } from './value.ops';
import { Rational } from './rational';

/** The value of a matrix expression: a scalar or a matrix of scalars (rows of equal length). */
export type MatrixValue = { kind: 'scalar'; v: Value } | { kind: 'matrix'; rows: Value[][] };

/** Largest side of a matrix the evaluator builds (products and inverses are cubic). */
const MAX_SIDE = 12;

function hasMatrix(j: MathJson): boolean {
  return Array.isArray(j) && (j[0] === 'Matrix' || j.some(hasMatrix));
}

function shapeOf(m: Value[][]): [number, number] {
  return [m.length, m[0]?.length ?? 0];
}

function matrixLiteral(j: MathJson[], env: ReadonlyMap<string, number>): Value[][] {
  const list = j[1];
  if (!Array.isArray(list) || list[0] !== 'List') throw new GraderError('unsupported', 'matrix without rows');
  const rows = list.slice(1).map((r) => {
    if (!Array.isArray(r) || r[0] !== 'List') throw new GraderError('unsupported', 'matrix row');
    return r.slice(1).map((c) => evaluate(c, env));
  });
  if (rows.length === 0 || rows.length > MAX_SIDE || rows.some((r) => r.length !== rows[0].length || r.length > MAX_SIDE))
    throw new GraderError('unsupported', 'matrix shape');
  return rows;
}

function elementwise(a: Value[][], b: Value[][], f: (x: Value, y: Value) => Value): Value[][] {
  const [r, c] = shapeOf(a);
  const [r2, c2] = shapeOf(b);
  if (r !== r2 || c !== c2) throw new GraderError('unsupported', 'matrix shapes differ');
  return a.map((row, i) => row.map((x, k) => f(x, b[i][k])));
}

function matmul(a: Value[][], b: Value[][]): Value[][] {
  const [r, n] = shapeOf(a);
  const [n2, c] = shapeOf(b);
  if (n !== n2) throw new GraderError('unsupported', 'matrix product of incompatible shapes');
  return Array.from({ length: r }, (_, i) => Array.from({ length: c }, (_, k) => a[i].reduce((acc, x, t) => vAdd(acc, vMul(x, b[t][k])), ZERO)));
}

function identity(n: number): Value[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, k) => (i === k ? ONE : ZERO)));
}

/** Gauss-Jordan elimination: the inverse (exact when every entry is rational). Throws for a singular matrix. */
function inverse(m: Value[][]): Value[][] {
  const [n, c] = shapeOf(m);
  if (n !== c) throw new GraderError('unsupported', 'inverse of a non-square matrix');
  const a = m.map((row, i) => [...row, ...identity(n)[i]]);
  for (let col = 0; col < n; col++) {
    let pivot = -1;
    let best = 0;
    for (let r = col; r < n; r++) {
      const v = a[r][col];
      if (isZero(v)) continue;
      if (v.exact) {
        pivot = r;
        break;
      }
      if (Math.abs(v.approx) > best) {
        best = Math.abs(v.approx);
        pivot = r;
      }
    }
    if (pivot < 0) throw new GraderError('division_by_zero', 'singular matrix');
    [a[col], a[pivot]] = [a[pivot], a[col]];
    const p = a[col][col];
    a[col] = a[col].map((x) => vDiv(x, p));
    for (let r = 0; r < n; r++) {
      if (r === col || isZero(a[r][col])) continue;
      const f = a[r][col];
      a[r] = a[r].map((x, k) => vSub(x, vMul(f, a[col][k])));
    }
  }
  return a.map((row) => row.slice(n));
}

function determinant(m: Value[][]): Value {
  const [n, c] = shapeOf(m);
  if (n !== c) throw new GraderError('unsupported', 'determinant of a non-square matrix');
  if (n === 1) return m[0][0];
  let acc = ZERO;
  for (let k = 0; k < n; k++) {
    const minor = m.slice(1).map((row) => row.filter((_, t) => t !== k));
    const term = vMul(m[0][k], determinant(minor));
    acc = k % 2 === 0 ? vAdd(acc, term) : vSub(acc, term);
  }
  return acc;
}

function multiply(a: MatrixValue, b: MatrixValue): MatrixValue {
  if (a.kind === 'scalar' && b.kind === 'scalar') return { kind: 'scalar', v: vMul(a.v, b.v) };
  if (a.kind === 'scalar' && b.kind === 'matrix') return { kind: 'matrix', rows: b.rows.map((r) => r.map((x) => vMul(a.v, x))) };
  if (a.kind === 'matrix' && b.kind === 'scalar') return { kind: 'matrix', rows: a.rows.map((r) => r.map((x) => vMul(x, b.v))) };
  return { kind: 'matrix', rows: matmul((a as { rows: Value[][] }).rows, (b as { rows: Value[][] }).rows) };
}

function power(b: MatrixValue, e: Value): MatrixValue {
  if (b.kind === 'scalar') throw new GraderError('unsupported', 'scalar power inside a matrix expression');
  if (!e.exact?.isInteger() || e.exact.n > 64n || e.exact.n < -64n) throw new GraderError('unsupported', 'matrix power');
  let k = e.exact.n;
  let base = b.rows;
  if (k < 0n) {
    base = inverse(base);
    k = -k;
  }
  const [n, c] = shapeOf(base);
  if (n !== c) throw new GraderError('unsupported', 'power of a non-square matrix');
  let acc = identity(n);
  while (k > 0n) {
    if (k & 1n) acc = matmul(acc, base);
    base = matmul(base, base);
    k >>= 1n;
  }
  return { kind: 'matrix', rows: acc };
}

/**
 * Evaluates a MathJSON expression that contains matrix literals (`\begin{pmatrix}..\end{pmatrix}`):
 * sums, differences, scalar multiples and quotients, matrix products, integer powers, `^{-1}` and
 * `^T`, determinants. Entries go to the scalar evaluator with `env`. Throws `GraderError` for shapes
 * that do not fit or constructs it does not know.
 */
export function evaluateMatrixExpression(j: MathJson, env: ReadonlyMap<string, number> = new Map()): MatrixValue {
  if (!hasMatrix(j)) return { kind: 'scalar', v: evaluate(j, env) };
  const [head, ...args] = j as [MathJson, ...MathJson[]];
  const ev = (x: MathJson): MatrixValue => evaluateMatrixExpression(x, env);
  const asMatrix = (x: MatrixValue): Value[][] => {
    if (x.kind !== 'matrix') throw new GraderError('unsupported', 'expected a matrix');
    return x.rows;
  };
  switch (head) {
    case 'Matrix':
      return { kind: 'matrix', rows: matrixLiteral(j as MathJson[], env) };
    case 'Delimiter':
    case 'Hold':
      if (args.length === 1) return ev(args[0]);
      break;
    case 'Negate':
      return multiply({ kind: 'scalar', v: exactV(new Rational(-1n)) }, ev(args[0]));
    case 'Add':
    case 'Subtract': {
      const vals = args.map(ev);
      if (head === 'Subtract' && vals.length === 1) return multiply({ kind: 'scalar', v: exactV(new Rational(-1n)) }, vals[0]);
      return vals.reduce((a, b) => {
        if (a.kind !== b.kind) throw new GraderError('unsupported', 'a matrix plus a scalar');
        if (a.kind === 'scalar') return { kind: 'scalar', v: head === 'Add' ? vAdd(a.v, (b as { v: Value }).v) : vSub(a.v, (b as { v: Value }).v) };
        return { kind: 'matrix', rows: elementwise(a.rows, asMatrix(b), head === 'Add' ? vAdd : vSub) };
      });
    }
    case 'Multiply':
    case 'InvisibleOperator':
      return args.map(ev).reduce(multiply);
    case 'Divide': {
      const a = ev(args[0]);
      const b = ev(args[1]);
      if (b.kind !== 'scalar') throw new GraderError('unsupported', 'division by a matrix');
      return multiply(a, { kind: 'scalar', v: vDiv(ONE, b.v) });
    }
    case 'Power':
      return power(ev(args[0]), evaluate(args[1], env));
    case 'Inverse':
      return { kind: 'matrix', rows: inverse(asMatrix(ev(args[0]))) };
    case 'Transpose': {
      const m = asMatrix(ev(args[0]));
      return { kind: 'matrix', rows: m[0].map((_, k) => m.map((row) => row[k])) };
    }
    case 'Determinant':
      return { kind: 'scalar', v: determinant(asMatrix(ev(args[0]))) };
    default:
      break;
  }
  throw new GraderError('unsupported', `no matrix evaluation for ${typeof head === 'string' ? head : JSON.stringify(head)}`);
}
