"""Exception hints ("Did you mean", "Did you forget to import") as `python3 prog.py` prints them: each
program runs once through run_cell and once as a file under this interpreter, and the last line of
stderr (the exception's message) must be the same."""
import subprocess
import sys

import pytest

from rstar_zygote import cell

PROGRAMS = [
    "print(606 * 533 + d)",                     # one-letter name: C suggests a builtin ('id')
    "sm = 1\nprint(sm + mx)",                    # 'max'
    "ln(3)",                                     # 'len'
    "i = 1\nprint(j)",                           # nothing close enough
    "sys.exit()",                                # stdlib module never imported
    "print(math.sqrt(2))",
    "abc",                                       # both hints
    "def f(sy):\n    return sys\nf(1)",          # a local first, and the import hint
    "def f():\n    tota = 1\n    return tot\nf()",
    "class A:\n    def __init__(self):\n        self.val = 1\n    def g(self):\n        return val\nA().g()",
    "total = 0\nfor k in range(3):\n    totl += k",
    "x = 1\ndel x\nprint(x)",
    "def f():\n    print(y)\n    y = 1\nf()",      # UnboundLocalError
    "import math\nmath.sqr(2)",
    "x = [1]\nx.sorte()",
    "'abc'.uper()",
    "from math import sqr",
    "from collections import Countr",
    "from nosuchmod import x",
    "import numpy as np\nnp.arang(3)",
    "n = 5\nresult = sum(range(n))\nprint(reslt)",
    "try:\n    undefined_thing\nexcept NameError:\n    raise ValueError('bad')",
    "try:\n    lst\nexcept NameError as e:\n    raise KeyError('k') from e",
    "raise ExceptionGroup('g', [NameError('n'), AttributeError('a')])",
    "def outer():\n    vals = [1]\n    def inner():\n        return valz\n    return inner()\nouter()",
    "print(pritn)",
    "Sum = 1\nprint(sum_ + 1)",
    "from math import *\nprint(sqr(2))",
]


def interpreter_stderr(code, tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(code + "\n")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60).stderr


@pytest.fixture
def err(capsys, monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    return capsys


@pytest.mark.parametrize("code", PROGRAMS)
def test_exception_message_matches_the_interpreter(code, err, tmp_path):
    expected = interpreter_stderr(code, tmp_path)
    assert expected, "the program must fail under the interpreter"
    assert cell.run_cell(code, {"__name__": "__main__", "__builtins__": __builtins__}, echo=False) == 1
    got = err.readouterr().err
    # The message lines (everything after the last source/caret line) must be the interpreter's.
    assert got.rstrip("\n").splitlines()[-1] == expected.rstrip("\n").splitlines()[-1]
    assert got.count("Did you") == expected.count("Did you")
