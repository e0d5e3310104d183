"""Cell running and exception display (rstar_zygote.cell): what a program prints and which exit code
it gets, run in this process with the std streams swapped for buffers."""
import io
import signal
import sys
import threading

import pytest

from rstar_zygote import cell


class Captured:
    """One of the program's streams as captured by pytest (which swaps sys.stdout/stderr for the call
    itself), accumulated; `truncate(0)`/`seek(0)` start it afresh, as on a StringIO."""

    def __init__(self, capsys, name):
        self.capsys, self.name, self.text = capsys, name, ""

    def getvalue(self):
        out, err = self.capsys.readouterr()
        self.pair[0].text += out
        self.pair[1].text += err
        return self.text

    def truncate(self, _n):
        self.getvalue()
        self.text = ""

    def seek(self, _n):
        pass


@pytest.fixture
def streams(capsys, monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    pair = (Captured(capsys, "out"), Captured(capsys, "err"))
    for c in pair:
        c.pair = pair
    return pair


def ns():
    return {"__name__": "__main__", "__builtins__": __builtins__}


def test_echo_prints_repr_of_final_expression(streams):
    out, _ = streams
    g = ns()
    assert cell.run_cell("x = 20\nx + 22", g, echo=True) == 0
    assert out.getvalue() == "42\n"
    assert cell.run_cell("x + 1", g, echo=False) == 0
    assert out.getvalue() == "42\n"  # script semantics: nothing echoed


def test_echo_skips_none_and_statements(streams):
    out, _ = streams
    assert cell.run_cell("print('a')\nNone", ns(), echo=True) == 0
    assert cell.run_cell("y = 3", ns(), echo=True) == 0
    assert out.getvalue() == "a\n"


def test_namespace_persists_between_cells(streams):
    out, _ = streams
    g = ns()
    cell.run_cell("import math\nr = 2", g, echo=True)
    cell.run_cell("math.pi * r ** 2", g, echo=True)
    assert out.getvalue().startswith("12.566")


def test_exception_display_cuts_runner_frames_and_shows_source_line(streams):
    _, err = streams
    code = "def f(d):\n    return d['a'] + 1\nf({'a': 'x'})"
    assert cell.run_cell(code, ns(), echo=True) == 1
    text = err.getvalue()
    assert text.startswith("Traceback (most recent call last):\n  File \"<code>\", line 3, in <module>\n    f({'a': 'x'})\n")
    assert "    return d['a'] + 1\n" in text
    assert text.endswith('TypeError: can only concatenate str (not "int") to str\n')
    assert "rstar_zygote" not in text


def test_last_line_without_newline_gets_carets_in_place(streams):
    _, err = streams
    assert cell.run_cell("x = [1]\ny = x[5]", ns(), echo=False) == 1
    assert "    y = x[5]\n        ~^^^\n" in err.getvalue()


def test_syntax_error_has_no_traceback_header(streams):
    _, err = streams
    assert cell.run_cell("x = (1,\nprint(x)", ns(), echo=True) == 1
    text = err.getvalue()
    assert text.startswith('  File "<code>", line 1\n')
    assert "Traceback" not in text
    assert text.rstrip().endswith("SyntaxError: '(' was never closed")


@pytest.mark.parametrize("code, rc, stderr", [
    ("import sys; sys.exit()", 0, ""),
    ("import sys; sys.exit(3)", 3, ""),
    ("raise SystemExit(256)", 0, ""),
    ("raise SystemExit(-1)", 255, ""),
    ("import sys; sys.exit('fatal')", 1, "fatal\n"),
    ("raise SystemExit(True)", 1, ""),
])
def test_system_exit_codes(streams, code, rc, stderr):
    _, err = streams
    assert cell.run_cell(code, ns(), echo=True) == rc
    assert err.getvalue() == stderr


def test_keyboard_interrupt_exits_by_sigint(streams):
    _, err = streams
    assert cell.run_cell("raise KeyboardInterrupt", ns(), echo=True) == cell.EXIT_BY_SIGINT == -signal.SIGINT
    assert err.getvalue().endswith("KeyboardInterrupt\n")


def test_custom_excepthook_is_used_and_its_failure_shown(streams):
    _, err = streams
    code = "import sys\ndef h(t, v, tb):\n    print('hooked', t.__name__, file=sys.stderr)\nsys.excepthook = h\nraise ValueError(1)"
    assert cell.run_cell(code, ns(), echo=True) == 1
    assert err.getvalue() == "hooked ValueError\n"
    err.truncate(0)
    err.seek(0)
    bad = "import sys\ndef h(t, v, tb):\n    raise RuntimeError('hook broke')\nsys.excepthook = h\nraise ValueError(2)"
    assert cell.run_cell(bad, ns(), echo=True) == 1
    text = err.getvalue()
    assert text.startswith("Error in sys.excepthook:\n")
    assert "\nOriginal exception was:\n" in text
    assert text.endswith("ValueError: 2\n")


def test_thread_excepthook_format(streams):
    _, err = streams
    t = threading.Thread(target=lambda: None, name="worker")
    try:
        raise ValueError("in thread")
    except ValueError as e:
        args = threading.ExceptHookArgs((type(e), e, e.__traceback__, t))
    cell.thread_excepthook(args)
    assert err.getvalue().startswith("Exception in thread worker:\nTraceback (most recent call last):\n")
    assert err.getvalue().endswith("ValueError: in thread\n")
    err.truncate(0)
    err.seek(0)
    cell.thread_excepthook(threading.ExceptHookArgs((SystemExit, SystemExit(3), None, t)))
    assert err.getvalue() == ""


def test_unraisable_hook_format(streams):
    _, err = streams

    class U:
        err_msg = "Exception ignored in atexit callback"
        object = len
        exc_type = RuntimeError
        exc_value = RuntimeError("at exit")
        exc_traceback = None

    cell.unraisable_hook(U)
    assert err.getvalue() == "Exception ignored in atexit callback: <built-in function len>\nRuntimeError: at exit\n"


def test_recursion_budget_hides_the_runner_depth(monkeypatch):
    real_get, real_set = sys.getrecursionlimit, sys.setrecursionlimit
    monkeypatch.setattr(sys, "getrecursionlimit", real_get)
    monkeypatch.setattr(sys, "setrecursionlimit", real_set)
    before = real_get()
    try:
        b = cell.RecursionBudget()
        b.install(7)
        assert real_get() == before + 7
        assert sys.getrecursionlimit() == before
        sys.setrecursionlimit(5000)
        assert real_get() == 5007 and sys.getrecursionlimit() == 5000
        with pytest.raises(ValueError):
            sys.setrecursionlimit(0)
        with pytest.raises(TypeError):
            sys.setrecursionlimit(1.5)
    finally:
        real_set(before)


def test_source_lines_end_in_newline():
    assert cell.source_lines("a\nb") == ["a\n", "b\n"]
    assert cell.source_lines("a\n") == ["a\n"]
    assert cell.source_lines("") == []


def test_source_lines_read_with_universal_newlines_as_linecache_reads_a_script():
    assert cell.source_lines("a\r\nb\rc") == ["a\n", "b\n", "c\n"]
    # Form feed and U+2028 do not end a line for the tokenizer: later line numbers must not shift.
    assert cell.source_lines("a = '\u2028'\x0c\nb") == ["a = '\u2028'\x0c\n", "b\n"]


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_traceback_carets_on_crlf_source_match_python3(streams, tmp_path, newline):
    import subprocess
    src = newline.join(["x = 1", "y = [1, 2]", "print(y[0] + y[5] + x)", ""])
    prog = tmp_path / "prog.py"
    prog.write_bytes(src.encode())
    ref = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True)
    _, err = streams
    assert cell.run_cell(src, ns(), echo=False) == 1
    assert err.getvalue().replace('"<code>"', f'"{prog}"') == ref.stderr


def test_clearing_main_runs_del_as_shutdown_does(streams):
    out, _ = streams
    g = ns()
    cell.run_cell("class N:\n    def __init__(self, k):\n        self.k = k\n    def __del__(self):\n        print('deleted', self.k)\n"
                  "n = N('public')\n_private = N('private')", g, echo=False)
    cell._clear_main(g)
    assert out.getvalue() == "deleted private\ndeleted public\n"  # one-underscore names go first
    assert g["n"] is None and g["__builtins__"] is __builtins__


def test_flush_failure_makes_exit_code_120(monkeypatch):
    class Broken(io.StringIO):
        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", Broken())
    monkeypatch.setattr(sys, "stderr", err)
    assert cell._flush_std(0) == 120
    assert cell._flush_std(3) == 3
    assert err.getvalue().endswith("BrokenPipeError: [Errno 32] Broken pipe\n")
