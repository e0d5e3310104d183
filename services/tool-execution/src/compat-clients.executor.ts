/**
 * Our own executor template in the shape rStar2-Agent's code-judge tool sends (its `jupyter_code` tool):
 * every submission is one whole Python program that defines a persistent executor, replays the earlier
 * cells of the rollout with their output suppressed, then runs the new cell, echoing a final bare
 * expression's repr, and on an error prints one line naming the exception and the cell's line and
 * ends with `os._exit(1)`. Cells travel base64-encoded inside the program, as there. Written from the
 * behaviour that client documents, not copied; it makes submissions of the same size (6.5 KB and up)
 * and the same failure mode (`os._exit` right after printing), which is what the compatibility test
 * needs. Used only by compat-clients.int.spec.ts.
 */
const EXECUTOR_SETUP = String.raw`
import ast
import base64
import io
import os
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout


class CellError(Exception):
    """An exception raised by a cell, with the cell line it came from (counted from the cell's first
    line, plus an offset when the cell was split before its last expression)."""

    def __init__(self, error, source, offset=0):
        self.error = error
        self.source = source
        line = getattr(error, "lineno", None)
        if line is None:
            tb = error.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            line = tb.tb_lineno if tb is not None else None
        self.line = None if line is None else line + offset
        super().__init__(self.describe())

    def describe(self):
        """One line like "NameError at line 3: name 'x' is not defined", then the offending line."""
        kind = type(self.error).__name__
        text = str(self.error)
        if self.line is not None:
            lines = self.source.splitlines()
            if 0 < self.line <= len(lines):
                return f"{kind} at line {self.line}: {text}\n  {lines[self.line - 1]}"
        return f"{kind}: {text}"


class Executor:
    """Runs cells one after another in one namespace, as a notebook kernel would: names a cell defines
    stay visible to the next cells of the same program."""

    def __init__(self):
        self.namespace = {"__name__": "__main__", "__file__": "<cell>", "__builtins__": __builtins__}

    @staticmethod
    def split_last_expression(source):
        """(body, last) where last is the source of a final bare expression, else None. A cell that does
        not parse raises CellError right away, pointing at the line the parser names."""
        try:
            tree = ast.parse(source)
        except SyntaxError as e:
            raise CellError(e, source)
        if not tree.body or not isinstance(tree.body[-1], ast.Expr):
            return source, None
        node = tree.body[-1]
        lines = source.splitlines()
        first = node.lineno - 1
        last = getattr(node, "end_lineno", None) or node.lineno
        return "\n".join(lines[:first]), "\n".join(lines[first:last])

    def run_source(self, source, mode):
        """Compile and run one piece of a cell; the value of an expression, else None."""
        code = compile(source, "<cell>", mode)
        if mode == "eval":
            return eval(code, self.namespace)
        exec(code, self.namespace)
        return None

    def run_cell(self, source, quiet):
        """Run one cell. quiet: a replayed earlier cell, whose output and errors are dropped (they were
        shown when it first ran). Otherwise a final expression's repr is printed, and an error prints
        its one-line description to stderr and ends the process at once with status 1."""
        sink_out = io.StringIO() if quiet else sys.stdout
        sink_err = io.StringIO() if quiet else sys.stderr
        try:
            body, last = self.split_last_expression(source)
            if body.strip():
                try:
                    with redirect_stdout(sink_out), redirect_stderr(sink_err):
                        self.run_source(body, "exec")
                except Exception as e:
                    raise CellError(e, body)
            if last is not None:
                offset = len(body.splitlines()) if body else 0
                try:
                    with redirect_stdout(sink_out), redirect_stderr(sink_err):
                        value = self.run_source(last, "eval")
                except SyntaxError:
                    try:
                        with redirect_stdout(sink_out), redirect_stderr(sink_err):
                            self.run_source(last, "exec")
                    except Exception as e:
                        raise CellError(e, last, offset)
                    value = None
                except Exception as e:
                    raise CellError(e, last, offset)
                if value is not None and not quiet:
                    print(repr(value))
        except Exception as e:
            if quiet:
                return
            if isinstance(e, CellError):
                print(str(e), file=sys.stderr)
            else:
                traceback.print_exc(file=sys.stderr)
            os._exit(1)


def decode_cell(encoded):
    """A cell as it travels in the program: base64 of its UTF-8 text."""
    return base64.b64decode(encoded.encode("ascii")).decode("utf-8")


executor = Executor()
`;

/** One cell as the template embeds it: base64 of its UTF-8 text. */
const encode = (source: string): string => Buffer.from(source, 'utf8').toString('base64');

/**
 * The whole program of one submission: the executor, `history` replayed quietly (the earlier cells of
 * the rollout), then `cell`.
 */
export function executorProgram(cell: string, history: readonly string[] = []): string {
  const replay = history.map((h) => `executor.run_cell(decode_cell("${encode(h)}"), quiet=True)\n`).join('');
  return `${EXECUTOR_SETUP}\n${replay}executor.run_cell(decode_cell("${encode(cell)}"), quiet=False)\n`;
}
