/**
 * Programs whose behaviour under `python3 prog.py` the sandbox must reproduce exactly (stdout, stderr,
 * exit code, status), run by parity.int.spec.ts both ways. `notInSession` names the README reason
 * ("Parity with python3") why a session cell differs by design; `timeoutMs` marks cases where the
 * limit applies (both sides are then stopped at it).
 */
export interface ParityCase {
  id: string;
  code: string;
  stdin?: string;
  timeoutMs?: number;
  notInSession?: string;
}

const SESSION_NO_EXIT = 'a session interpreter does not exit after a cell';

export const PARITY_CASES: ParityCase[] = [
  // Threads
  { id: 'thread-prints-after-main', code: 'import threading, time\ndef work():\n    time.sleep(0.2)\n    print("from thread")\nthreading.Thread(target=work).start()\nprint("main done")' },
  { id: 'thread-exception', code: 'import threading\ndef work():\n    raise ValueError("in thread")\nt = threading.Thread(target=work, name="worker")\nt.start()\nt.join()\nprint("after")' },
  { id: 'thread-sys-exit-is-silent', code: 'import threading, sys\nt = threading.Thread(target=lambda: sys.exit(3))\nt.start(); t.join()\nprint("alive")' },
  { id: 'daemon-thread-left-running', code: 'import threading, time\ndef spin():\n    while True:\n        time.sleep(0.01)\nthreading.Thread(target=spin, daemon=True).start()\nprint("main ends")' },
  { id: 'non-daemon-thread-never-ends', code: 'import threading, time\ndef spin():\n    while True:\n        time.sleep(0.01)\nthreading.Thread(target=spin).start()\nprint("main ends", flush=True)', timeoutMs: 1500 },
  { id: 'thread-pool-executor', code: 'from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(4) as ex:\n    print(sorted(ex.map(lambda v: v * v, range(10))))' },
  // atexit and the end of the interpreter
  { id: 'atexit-lifo', code: 'import atexit\natexit.register(print, "first registered")\natexit.register(print, "second registered")\nprint("body")', notInSession: SESSION_NO_EXIT },
  { id: 'atexit-raises', code: 'import atexit\ndef bad():\n    raise RuntimeError("at exit")\natexit.register(bad)\nprint("body")', notInSession: SESSION_NO_EXIT },
  { id: 'del-at-exit', code: 'class Noisy:\n    def __del__(self):\n        print("deleted")\nn = Noisy()\nprint("created")', notInSession: SESSION_NO_EXIT },
  { id: 'unflushed-wrapper-flushed-at-exit', code: 'import os\nout = os.fdopen(os.dup(1), "w")\nout.write("buffered, never flushed\\n")', notInSession: SESSION_NO_EXIT },
  { id: 'write-without-newline', code: 'import sys\nsys.stdout.write("no newline")\nprint("x", end="")' },
  { id: 'os-exit-skips-cleanup', code: 'import atexit, os\natexit.register(print, "never")\nprint("before", flush=True)\nos._exit(5)' },
  // sys.exit and exit codes
  { id: 'sys-exit-int', code: 'import sys\nprint("out")\nsys.exit(3)' },
  { id: 'sys-exit-message', code: 'import sys\nsys.exit("fatal: bad input")' },
  { id: 'sys-exit-none', code: 'import sys\nsys.exit()' },
  { id: 'sys-exit-256-wraps', code: 'raise SystemExit(256)' },
  { id: 'sys-exit-negative', code: 'import sys\nsys.exit(-1)' },
  { id: 'exit-builtin', code: 'print("a")\nexit(7)' },
  { id: 'sys-exit-object', code: 'import sys\nsys.exit(["not", "an", "int"])' },
  // Exceptions and their display
  { id: 'uncaught-exception', code: 'def f(d):\n    return d["a"]["b"] + 1\nf({"a": {"b": "x"}})' },
  { id: 'chained-exception', code: 'try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    raise ValueError("wrapped") from e' },
  { id: 'exception-context-and-note', code: 'try:\n    int("x")\nexcept ValueError:\n    e = KeyError("k")\n    e.add_note("a note")\n    raise e' },
  { id: 'syntax-error', code: 'x = (1,\nprint(x)' },
  { id: 'indentation-error', code: 'if True:\nprint(1)' },
  { id: 'custom-excepthook', code: 'import sys\ndef hook(t, v, tb):\n    print("hooked:", t.__name__, v, file=sys.stderr)\nsys.excepthook = hook\nraise RuntimeError("boom")' },
  { id: 'keyboard-interrupt', code: 'print("before")\nraise KeyboardInterrupt', notInSession: 'a session cannot end by SIGINT and live on: exit code 1 instead' },
  { id: 'traceback-print-exc', code: 'import traceback\ntry:\n    [][1]\nexcept IndexError:\n    traceback.print_exc()\nprint("handled")' },
  // __main__
  { id: 'main-guard', code: 'def main():\n    print("main ran", __name__)\nif __name__ == "__main__":\n    main()' },
  { id: 'main-module-attrs', code: 'import __main__, sys\nprint(__main__.__name__, __main__.__spec__, sys.modules["__main__"] is __main__)\nprint(__file__ == sys.argv[0], len(sys.argv))' },
  { id: 'pickle-main-function', code: 'import pickle\ndef f(x):\n    return x + 1\nprint(pickle.loads(pickle.dumps(f))(1))' },
  { id: 'import-module-written-to-cwd', code: 'with open("helper_mod.py", "w") as fh:\n    fh.write("VALUE = 42\\n")\nimport helper_mod\nprint(helper_mod.VALUE)' },
  // stdin
  { id: 'stdin-lines', code: 'import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])', stdin: 'abc\ndef\n' },
  { id: 'stdin-input-prompt', code: 'a = input("a? ")\nb = input()\nprint(int(a) + int(b))', stdin: '2\n40\n' },
  { id: 'stdin-crlf-kept', code: 'import sys\nprint(repr(sys.stdin.read()))', stdin: 'a\r\nb\r\n' },
  { id: 'stdin-buffer-bytes', code: 'import sys\nprint(sys.stdin.buffer.read())', stdin: 'héllo\n' },
  { id: 'input-at-eof', code: 'print("asking")\nx = input()' },
  { id: 'stdin-no-input-read', code: 'import sys\nprint(repr(sys.stdin.read()))' },
  // Encoding
  { id: 'print-lone-surrogate', code: 'print("before")\nprint("\\ud800")' },
  { id: 'surrogate-to-stderr', code: 'import sys\nprint("\\udc80 on stderr", file=sys.stderr)' },
  { id: 'non-ascii-output', code: 'print("héllo wörld ✓ 😀 中文")' },
  { id: 'raw-bytes-stdout', code: 'import sys\nsys.stdout.buffer.write(b"\\xff\\xfe raw\\n")\nsys.stdout.buffer.flush()' },
  { id: 'stream-properties', code: 'import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n    print(s.name, s.encoding, s.errors, s.line_buffering, s.isatty())\nprint(sys.getdefaultencoding(), sys.getfilesystemencoding(), sys.flags.utf8_mode)' },
  // Warnings
  { id: 'user-warning', code: 'import warnings\nwarnings.warn("careful")\nprint("continued")' },
  { id: 'deprecation-in-main', code: 'import warnings\nwarnings.warn("old api", DeprecationWarning)\nprint("x")' },
  { id: 'numpy-runtime-warning', code: 'import numpy as np\nprint(np.float64(1.0) / 0)' },
  { id: 'warning-once-per-location', code: 'import warnings\nfor i in range(3):\n    warnings.warn("repeated")\nprint("done")' },
  // multiprocessing
  { id: 'multiprocessing-pool', code: 'from multiprocessing import Pool\ndef sq(v):\n    return v * v\nif __name__ == "__main__":\n    with Pool(2) as p:\n        print(p.map(sq, range(6)))' },
  { id: 'multiprocessing-process-exitcode', code: 'import multiprocessing as mp, sys\ndef child():\n    print("in child", flush=True)\n    sys.exit(4)\np = mp.Process(target=child)\np.start(); p.join()\nprint("child exit", p.exitcode)' },
  { id: 'subprocess-python', code: 'import subprocess, sys\nr = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)\nprint(r.returncode, r.stdout.strip())' },
  // Signals
  { id: 'signal-handler', code: 'import os, signal\ndef h(n, f):\n    print("got", signal.Signals(n).name)\nsignal.signal(signal.SIGUSR1, h)\nos.kill(os.getpid(), signal.SIGUSR1)\nprint("after")' },
  { id: 'killed-by-sigterm', code: 'import os, signal\nprint("going", flush=True)\nos.kill(os.getpid(), signal.SIGTERM)' },
  { id: 'killed-by-sigsegv', code: 'import ctypes\nprint("crash next", flush=True)\nctypes.string_at(0)' },
  { id: 'alarm', code: 'import signal, time\nsignal.signal(signal.SIGALRM, lambda n, f: print("alarm"))\nsignal.setitimer(signal.ITIMER_REAL, 0.05)\ntime.sleep(0.5)\nprint("woke")' },
  { id: 'default-handlers', code: 'import signal\nprint(signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGPIPE), signal.getsignal(signal.SIGTERM))' },
  // Recursion
  { id: 'recursion-depth', code: 'def f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nprint(f(0))' },
  { id: 'recursion-error-traceback', code: 'def f(n):\n    return f(n + 1)\nf(0)' },
  { id: 'recursion-limit-raised', code: 'import sys\nprint(sys.getrecursionlimit())\nsys.setrecursionlimit(5000)\nprint(sys.getrecursionlimit())\ndef depth(n):\n    return n if n >= 4000 else depth(n + 1)\nprint(depth(0))' },
  { id: 'recursion-limit-lowered', code: 'import sys\nsys.setrecursionlimit(60)\ndef f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nprint(f(0))' },
  // Numbers and locale
  { id: 'large-int-digits', code: 'n = 7 ** 20000\nprint(len(str(n)), str(n)[:20])' },
  { id: 'large-int-arith', code: 'from math import factorial\nprint(factorial(300) % 1000003, (2 ** 4423 - 1) % 10 ** 12)' },
  { id: 'float-repr', code: 'print(0.1 + 0.2, 1e300 * 1e10, float("nan"), 2 ** 0.5)' },
  { id: 'locale-defaults', code: 'import locale\nprint(locale.getlocale(), locale.getpreferredencoding(False))\nprint(locale.setlocale(locale.LC_ALL, ""))\nprint(locale.localeconv()["decimal_point"])' },
  { id: 'time-zone', code: 'import time\nprint(time.tzname)' },
  // Everyday math code
  { id: 'sympy-solve', code: 'import sympy as sp\nx = sp.Symbol("x")\nprint(sp.solve(x**2 - 5*x + 6, x))' },
  { id: 'numpy-print', code: 'import numpy as np\na = np.arange(6).reshape(2, 3)\nprint(a)\nprint(a.sum(), a.mean())' },
  { id: 'fractions-decimal', code: 'from fractions import Fraction\nfrom decimal import Decimal, getcontext\ngetcontext().prec = 30\nprint(Fraction(1, 3) + Fraction(1, 6), Decimal(1) / Decimal(7))' },
  { id: 'bare-expression-not-echoed', code: 'x = 41\nx + 1' },
];
