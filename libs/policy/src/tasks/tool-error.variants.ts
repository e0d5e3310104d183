import { PolicyInputError } from '../errors';
import { Rng, deriveSeed } from '../rng';
import { Tokenizer, type TokenizerSpec } from '../tokenizer';
import type { Task } from './task.generator';

/**
 * The realistic mistakes an SFT trace may make. The first three fail before printing and the trace
 * recovers with a corrected call: a wrong variable (NameError), a forgotten `import math` (NameError), an
 * unclosed parenthesis (SyntaxError). `trailing-check` prints the correct result and THEN fails on a
 * leftover check of an undefined name (`; print(check)`, NameError): status `runtime_error` (erroneous,
 * docs/design/protocol.md §3) with the answer in stdout, so the trace answers from it without a second call - the
 * noisy-but-correct trajectory GRPO-RoC down-samples (rStar2-Agent §3), without needing a recovery.
 */
export const TOOL_ERROR_KINDS = ['wrong-variable', 'missing-import', 'unclosed-paren', 'trailing-check'] as const;
export type ToolErrorKind = (typeof TOOL_ERROR_KINDS)[number];

/** The kinds whose failing call is followed by a corrected one (the default mix of `planToolErrors`). */
export const RECOVERING_TOOL_ERROR_KINDS: readonly ToolErrorKind[] = ['wrong-variable', 'missing-import', 'unclosed-paren'];

/** The statement `trailing-check` appends: it runs after the print, so stdout already holds the answer. */
export const TRAILING_CHECK = '; print(check)';

/** Whether a trace with this mistake recovers with a second, corrected call (false: it answers from the failed call's stdout). */
export const recovers = (kind: ToolErrorKind): boolean => kind !== 'trailing-check';

/** A failing first program of a trace: the buggy code and which mistake it is. */
export interface FailingCall {
  kind: ToolErrorKind;
  code: string;
}

/**
 * The buggy version of a task's reference program for a mistake `kind`. The program must fail when run
 * (the SFT builder checks that against the real sandbox result).
 * @throws PolicyInputError when the mistake does not apply to the task (`missing-import` needs `import math; `).
 */
export function failingCode(task: Pick<Task, 'id' | 'code'>, kind: ToolErrorKind): string {
  switch (kind) {
    case 'wrong-variable':
      // The first literal replaced by a name that was never assigned: NameError.
      return task.code.replace(/\d+/, 'x');
    case 'missing-import':
      if (!task.code.startsWith('import math; ')) throw new PolicyInputError(`task ${task.id}: "missing-import" needs a program that imports math, got "${task.code}"`, 'kind');
      return task.code.slice('import math; '.length);
    case 'unclosed-paren':
      if (!task.code.endsWith(')')) throw new PolicyInputError(`task ${task.id}: "unclosed-paren" needs a program ending in ")", got "${task.code}"`, 'kind');
      return task.code.slice(0, -1);
    case 'trailing-check':
      return task.code + TRAILING_CHECK;
  }
}

/**
 * Which tasks' SFT traces make a failing call, and with which mistake: task `i` errs when a draw of
 * `Rng(deriveSeed(seed, i))` falls below `rate`, and its mistake is drawn among the `kinds` (default
 * {@link RECOVERING_TOOL_ERROR_KINDS}) that apply to it (a forgotten import only for the math.* kinds, a
 * wrong variable only for the others; `unclosed-paren` and `trailing-check` always). Deterministic in
 * `(seed, rate, tasks, kinds)`. Returns one entry per task, `null` for a clean trace.
 * @throws PolicyInputError when `rate` is outside [0, 1] or `kinds` is empty or names an unknown kind.
 */
export function planToolErrors(tasks: readonly Pick<Task, 'id' | 'code'>[], rate: number, seed: number, kinds: readonly ToolErrorKind[] = RECOVERING_TOOL_ERROR_KINDS): Array<FailingCall | null> {
  if (!(rate >= 0 && rate <= 1)) throw new PolicyInputError(`toolErrorRate must be a number in [0, 1], got ${rate}`, 'toolErrorRate');
  if (kinds.length === 0) throw new PolicyInputError('toolErrorKinds must name at least one kind (or be left out for the default mix)', 'toolErrorKinds');
  for (const k of kinds) if (!TOOL_ERROR_KINDS.includes(k)) throw new PolicyInputError(`unknown tool-error kind "${k}" (known: ${TOOL_ERROR_KINDS.join(', ')})`, 'toolErrorKinds');
  return tasks.map((t, i) => {
    const rng = new Rng(deriveSeed(seed, i));
    if (rate === 0 || rng.next() >= rate) return null;
    const math = t.code.startsWith('import math; ');
    const usable = kinds.filter((k) => (k === 'missing-import' ? math : k === 'wrong-variable' ? !math : true));
    if (usable.length === 0) return null;
    const kind = rng.pick(usable);
    return { kind, code: failingCode(t, kind) };
  });
}

/**
 * Phrase tokens for Python error output as the sandbox prints it (docs/design/protocol.md §3: `File "<code>"` header,
 * offending line, caret line, message). Without them one error response costs ~100-170 tokens and an
 * err-and-recover trace no longer fits a small context; with them ~35 (POLICY-NOTES: short sequences are
 * the cheapest speed-up).
 */
export const TOOL_ERROR_PHRASE_TOKENS: readonly string[] = [
  'stderr: Traceback (most recent call last):\n  File "<code>", line 1, in <module>\n    ',
  'stderr:   File "<code>", line 1\n    ',
  "NameError: name '",
  "' is not defined",
  "SyntaxError: '(' was never closed",
  'The code failed. Let me fix it.',
  '    ',
];

/**
 * The tokenizer spec of a policy trained on err-and-recover traces: the default spec plus
 * {@link TOOL_ERROR_PHRASE_TOKENS} appended (a different vocabulary, so its own model). Used only when the SFT data has a
 * tool-error share above 0, so default checkpoints keep the default vocabulary.
 */
export function toolErrorTokenizerSpec(): TokenizerSpec {
  const base = Tokenizer.defaultSpec();
  return { ...base, pieces: [...base.pieces, ...TOOL_ERROR_PHRASE_TOKENS.filter((p) => !base.pieces.includes(p))] };
}
