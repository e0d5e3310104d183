import type { AnswerNode } from './answer.parser';

/**
 * The names an answer gives its value (`t = 4`, `f(x) = ..`, `x \in [1, 2]`), compared by rule
 * `variable` (GRADING-RULES.md): when the prediction and the gold both name the quantity, the names must
 * agree, or a value that is right for another unknown would earn the reward. Pure string work on
 * parsed labels; no evaluation.
 */

/** A function applied to variables (`f(x)`, `f^{-1}(x, y)`, `y'(t)`): its name; the arguments are bound. */
const FUNCTION_OF_VARIABLES = /^([a-zA-Z](?:\^\{?-1\}?|')*)\(\s*[a-zA-Z](?:\s*,\s*[a-zA-Z])*\s*\)$/;

/** The canonical text of one label leaf: spacing, braces of one-character scripts, notations of a length or an angle. */
function leafName(latex: string): string {
  let s = latex.replace(/\s+/g, '');
  s = s.replace(/([_^])\{(\w)\}/g, '$1$2');
  // `m\angle ABC` and `\angle ABC` name one angle; `|AB|`, `\overline{AB}` and `AB` one length.
  s = s.replace(/^m\\angle/, '\\angle');
  s = s.replace(/^\|([A-Z]+)\|$/, '$1').replace(/^\\overline\{?([A-Z]+)\}?$/, '$1');
  const f = FUNCTION_OF_VARIABLES.exec(s);
  // `f(t)` and `f(x)` name the same function (rule `renamed_variable` renames the argument); `y(x)` is `y`.
  return f ? f[1] : s;
}

/**
 * The canonical name of a label node (`x`, `f` for `f(x)`, `(p,q)` for a tuple of names, `V_1:V_2`), or
 * null when the node is not a name.
 */
export function labelName(n: AnswerNode): string | null {
  switch (n.kind) {
    case 'expr':
      return leafName(n.latex);
    case 'text':
      return leafName(n.raw);
    case 'choice':
      return n.letter;
    case 'tuple': {
      const parts = n.items.map(labelName);
      return parts.some((p) => p === null) ? null : `(${parts.join(',')})`;
    }
    case 'ratio': {
      const parts = n.parts.map(labelName);
      return parts.some((p) => p === null) ? null : parts.join(':');
    }
    default:
      return null;
  }
}

/** `f(x)`, `g(t)`, `f^{-1}(x)`: a label that names a function of variables. */
function namesFunction(n: AnswerNode): boolean {
  return n.kind === 'expr' && FUNCTION_OF_VARIABLES.test(n.latex.replace(/\s+/g, ''));
}

/**
 * Whether two labels name the same quantity: the same canonical name; or both name a function of
 * variables, or `y` against one (`k(x) = 2x` and `y = 2x` state the function of `f(x) = 2x`: the name
 * of a function is the solver's choice, its values are compared as usual); a numbered name of the
 * other (`x_1` for `x`). Case matters (`V` and `v` are different quantities); `f(2)` and `f(3)` are
 * different values, and so are `x_1` and `x_2`.
 */
export function sameLabel(a: AnswerNode, b: AnswerNode): boolean {
  const x = labelName(a);
  const y = labelName(b);
  if (x === null || y === null) return false;
  // `x_1 = 5` numbers a solution of the unknown `x`.
  if (x === y || baseName(x) === y || baseName(y) === x) return true;
  const fa = namesFunction(a);
  const fb = namesFunction(b);
  return (fa && fb) || (x === 'y' && fb) || (y === 'y' && fa);
}

/** A label's name without an index (`x_1` -> `x`): the solutions of one unknown may be numbered. */
export function baseName(name: string): string {
  return name.replace(/_(?:\{[^{}]*\}|\w)$/, '');
}

/**
 * Whether two lists of names (every item of each list named) name different unknowns: the multisets of
 * names differ, also after dropping indices (`x_1 = 2, x_2 = 3` names the same unknown as `x = 2, x = 3`).
 */
export function differentNames(p: string[], g: string[]): boolean {
  const key = (xs: string[]) => [...xs].sort().join('\u0000');
  if (key(p) === key(g)) return false;
  return key(p.map(baseName)) !== key(g.map(baseName));
}

/** A bare single-letter name (`t`), the form an asked-for unknown takes. */
export function isBareVariable(name: string | null): name is string {
  return name !== null && /^[a-zA-Z]$/.test(name);
}
