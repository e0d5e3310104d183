"""Running a program as `python3 prog.py` runs it (stateless calls) or as a Jupyter cell (sessions).

What CPython does around a script, and so what a call reproduces (Modules/main.c, Python/pythonrun.c,
Python/pylifecycle.c): std streams built for the environment (UTF-8; stdout strict, stderr
backslashreplace; write-through because PYTHONUNBUFFERED is set); an uncaught exception printed by
`sys.excepthook`; `SystemExit` turned into the exit code (a non-int code printed to stderr, exit 1); an
uncaught KeyboardInterrupt ending the process by SIGINT; then at exit: wait for non-daemon threads
(`threading._shutdown`), run `atexit` handlers, flush stdout/stderr (exit 120 when that fails), clear
`__main__` (so `__del__` methods and unflushed file objects run/flush) and exit.
Differences kept on purpose are listed in libs/sandbox/README.md ("Parity with python3").
"""
import ast
import atexit
import builtins
import gc
import io
import linecache
import os
import signal
import sys
import threading
import traceback
import types

from rstar_zygote import suggestions

CODE_NAME = "<code>"
# run_cell's return value for "ended by an uncaught KeyboardInterrupt": CPython then exits by SIGINT.
EXIT_BY_SIGINT = -signal.SIGINT


def build_std_streams():
    """sys.stdin/stdout/stderr (and sys.__std*__) over fds 0-2, built as CPython builds them from the
    sandbox's environment (PYTHONIOENCODING=utf-8, PYTHONUNBUFFERED=1, not a tty): stdin buffered and
    strict, stdout unbuffered and strict (printing a lone surrogate raises UnicodeEncodeError), stderr
    unbuffered with backslashreplace; no newline translation (POSIX)."""
    streams = []
    for fd, name, mode, errors in ((0, "<stdin>", "r", "strict"), (1, "<stdout>", "w", "strict"),
                                   (2, "<stderr>", "w", "backslashreplace")):
        raw = io.FileIO(fd, mode, closefd=False)
        raw.name = name
        buf = io.BufferedReader(raw) if mode == "r" else raw
        streams.append(io.TextIOWrapper(buf, encoding="utf-8", errors=errors, newline="\n",
                                        line_buffering=False, write_through=mode == "w"))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams


def fresh_main():
    """A real `__main__` module for the program, so pickling functions it defines (multiprocessing,
    concurrent.futures) finds them by name. Returns its namespace."""
    mod = types.ModuleType("__main__")
    mod.__dict__["__builtins__"] = builtins
    mod.__dict__["__file__"] = CODE_NAME
    mod.__dict__["__cached__"] = None
    sys.modules["__main__"] = mod
    return mod.__dict__


def as_script(workdir):
    """What a script sees of how it was started: `sys.argv == ['<code>']` and the script's directory
    (its work dir) first on sys.path, so a module it writes there can be imported."""
    sys.argv = [CODE_NAME]
    sys.orig_argv = [sys.executable, CODE_NAME]
    if sys.path:
        sys.path[0] = workdir
    else:
        sys.path.insert(0, workdir)


class RecursionBudget:
    """The program's frames start below the zygote's own (a few frames deep), so without this a
    recursion would fail that many frames earlier than under `python3 prog.py`. The real limit is raised
    by that depth, and sys.getrecursionlimit/setrecursionlimit are wrapped so the program sees and sets
    the limit it would see and set in a fresh interpreter."""

    def __init__(self):
        self.offset = 0
        self.real_get = sys.getrecursionlimit
        self.real_set = sys.setrecursionlimit

    def install(self, offset):
        self.offset = offset
        real_get, real_set = self.real_get, self.real_set
        real_set(real_get() + offset)

        def getrecursionlimit():
            """Return the current value of the recursion limit."""
            return real_get() - offset

        def setrecursionlimit(limit):
            """Set the maximum depth of the Python interpreter stack to n."""
            if not isinstance(limit, int):
                raise TypeError("'%s' object cannot be interpreted as an integer" % type(limit).__name__)
            if limit < 1:
                raise ValueError("recursion limit must be greater or equal than 1")
            real_set(limit + offset)

        sys.getrecursionlimit = getrecursionlimit
        sys.setrecursionlimit = setrecursionlimit


def frame_depth():
    """Python frames on the stack now, this function's caller included."""
    n, f = 0, sys._getframe(1)
    while f is not None:
        n += 1
        f = f.f_back
    return n


def cut_traceback(tb):
    """The traceback from the program's first frame on: the runner's frames are not the program's."""
    while tb is not None and tb.tb_frame.f_code.co_filename != CODE_NAME:
        tb = tb.tb_next
    return tb


def display(exc_type, exc, tb):
    """What the default sys.excepthook prints. A traceback goes through the traceback module: the C
    implementation (used by CPython < 3.13) reads source lines from the file on disk and so shows none
    for `<code>`, while the traceback module reads them from linecache, where run_cell puts the program
    (its output is otherwise the same: carets, chained exceptions, notes). The program's own syntax
    error (no traceback) goes through the C hook, whose caret the traceback module draws differently
    for some errors (an IndentationError: `^^^^^` instead of `^`)."""
    if tb is None and isinstance(exc, SyntaxError) and exc.__cause__ is None and exc.__context__ is None:
        sys.__excepthook__(exc_type, exc, tb)
        return
    te = traceback.TracebackException(exc_type, exc, tb, compact=True)
    sys.stderr.write("".join(suggestions.with_c_hints(te, exc).format()))


def unraisable_hook(u):
    """sys.unraisablehook as CPython's default prints it ("Exception ignored in ...", the traceback,
    the exception; no chained exceptions), with the program's source lines (see `display`)."""
    f = sys.stderr
    if f is None:
        return
    try:
        if u.object is not None:
            try:
                obj = repr(u.object)
            except Exception:
                obj = "<object repr() failed>"
            f.write((f"{u.err_msg}: " if u.err_msg is not None else "Exception ignored in: ") + obj + "\n")
        elif u.err_msg is not None:
            f.write(f"{u.err_msg}:\n")
        if u.exc_traceback is not None:
            f.write("Traceback (most recent call last):\n")
            f.write("".join(traceback.format_tb(u.exc_traceback)))
        if u.exc_type is not None:
            f.write("".join(traceback.format_exception_only(u.exc_type, u.exc_value)))
        f.flush()
    except Exception:
        pass


def thread_excepthook(args):
    """threading.excepthook as CPython's default prints it ("Exception in thread NAME:" and the
    traceback; SystemExit is silent), with the program's source lines (see `display`)."""
    if args.exc_type is SystemExit:
        return
    stderr = sys.stderr
    if stderr is None:
        thread = args.thread
        stderr = getattr(thread, "_stderr", None) if thread is not None else None
        if stderr is None:
            return
    name = args.thread.name if args.thread is not None else threading.get_ident()
    print(f"Exception in thread {name}:", file=stderr, flush=True)
    traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback, file=stderr)
    stderr.flush()


def install_hooks():
    """The program's exception display hooks (see `display`); a program may replace them."""
    threading.excepthook = thread_excepthook
    sys.unraisablehook = unraisable_hook


def print_exception(exc):
    """Print an uncaught exception as the interpreter does at top level: through `sys.excepthook` (a
    program may replace it), with CPython's fallback text when the hook is missing or fails."""
    tb = cut_traceback(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename == CODE_NAME:
        tb = None
    exc.__traceback__ = tb
    sys.last_exc, sys.last_type, sys.last_value, sys.last_traceback = exc, type(exc), exc, tb
    hook = getattr(sys, "excepthook", None)
    try:
        if hook is None:
            sys.stderr.write("sys.excepthook is missing\n")
            display(type(exc), exc, tb)
            return
        if hook is sys.__excepthook__:
            display(type(exc), exc, tb)  # the default hook's text, with the program's source lines
            return
        hook(type(exc), exc, tb)
    except SystemExit:
        raise
    except BaseException as e2:  # noqa: B036 - the hook's own failure is shown, as CPython shows it
        try:
            sys.stderr.write("Error in sys.excepthook:\n")
            display(type(e2), e2, cut_traceback(e2.__traceback__))
            sys.stderr.write("\nOriginal exception was:\n")
            display(type(exc), exc, tb)
        except BaseException:
            pass


def system_exit_code(exc):
    """The exit code of an uncaught SystemExit (CPython's _Py_HandleSystemExit): None -> 0, an int ->
    itself (the OS keeps its low 8 bits), anything else -> printed to stderr, exit 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def source_lines(code):
    """The program's lines as linecache holds a file's: read with universal newlines, as linecache reads
    a script (CRLF and a lone CR become LF, and only those end a line: `str.splitlines` would also split
    at form feeds and U+2028, shifting every later line number), each ending in a newline (the traceback
    module places its carets one column off on a line that keeps its CR, or on a last line without one)."""
    lines = io.StringIO(code, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def run_cell(code, ns, echo):
    """Execute `code` (text) in namespace `ns` as the program's `<code>`; with `echo` (Jupyter semantics,
    docs/design/protocol.md §3) a final bare expression's repr is printed when it is not None. An uncaught exception is
    printed as at top level. Returns the exit code, or EXIT_BY_SIGINT for an uncaught KeyboardInterrupt."""
    linecache.cache[CODE_NAME] = (len(code), None, source_lines(code), CODE_NAME)
    try:
        tree = ast.parse(code, CODE_NAME, "exec")
        last = None
        if echo and tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, CODE_NAME, "exec"), ns)
        if last is not None:
            value = eval(compile(last, CODE_NAME, "eval"), ns)
            if value is not None:
                print(repr(value))
        return 0
    except SystemExit as e:
        return system_exit_code(e)
    except KeyboardInterrupt as e:
        print_exception(e)
        return EXIT_BY_SIGINT
    except BaseException as e:  # noqa: B036 - everything the program raises is its result
        try:
            print_exception(e)
        except SystemExit as e2:  # an excepthook that exits decides the code
            return system_exit_code(e2)
        except BaseException:
            sys.stderr.write(f"{type(e).__name__}\n")
        return 1


def _flush_std(rc):
    """Flush sys.stdout and sys.stderr as CPython's flush_std_files does: a closed stream is skipped;
    stdout failing to flush is reported as an ignored exception and makes the exit code 120."""
    for name in ("stdout", "stderr"):
        f = getattr(sys, name, None)
        if f is None or getattr(f, "closed", False):
            continue
        try:
            f.flush()
        except Exception as e:
            if name == "stdout":
                rc = 120 if rc == 0 else rc
                try:
                    sys.stderr.write(f"Exception ignored in: {f!r}\n")
                    sys.stderr.write("".join(traceback.format_exception_only(type(e), e)))
                except Exception:
                    pass
    return rc


def _clear_main(ns):
    """Clear the program's module as interpreter shutdown does (_PyModule_ClearDict: names with one
    leading underscore first, then every name but __builtins__, set to None), then collect: `__del__`
    methods run and file objects the program left open are flushed, as under `python3 prog.py`."""
    for key in list(ns):
        if key.startswith("_") and not key.startswith("__"):
            ns[key] = None
    for key in list(ns):
        if key != "__builtins__":
            ns[key] = None
    gc.collect()


def finish_script(rc, ns):
    """What CPython does after the main module ran (Py_FinalizeEx, in its order): wait for non-daemon
    threads, run atexit handlers, flush stdio, clear `__main__`, flush again. Returns the exit code."""
    try:
        main = threading.main_thread()
        # Only when there is a thread to wait for: _shutdown itself costs ~0.5 ms in a fresh fork.
        if any(t is not main and not t.daemon for t in threading.enumerate()):
            threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    rc = _flush_std(rc)
    try:
        _clear_main(ns)
    except BaseException:
        pass
    return _flush_std(rc)


def exit_process(rc):
    """End this process with `rc`; EXIT_BY_SIGINT ends it by SIGINT (default action), as CPython does
    after an uncaught KeyboardInterrupt, so the parent sees the signal. Never returns."""
    if rc == EXIT_BY_SIGINT:
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            os._exit(130)
    os._exit(rc)


def join_cell_threads():
    """Session cells: wait for the non-daemon threads still running (as a script's exit would), so
    their output belongs to the cell that started them. Daemon threads are left running."""
    main = threading.main_thread()
    for t in threading.enumerate():
        if t is not main and not t.daemon:
            t.join()
