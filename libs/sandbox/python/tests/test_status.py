"""Status classification and signal names (rstar_zygote.status), on real wait statuses."""
import os
import signal

import pytest

from rstar_zygote.status import classify, ending, signal_name


def wait_status(code):
    """The real wait status of a child that runs `code` (a callable) and exits."""
    pid = os.fork()
    if pid == 0:
        try:
            code()
        finally:
            os._exit(0)
    _, st = os.waitpid(pid, 0)
    return st


def test_signal_names():
    assert signal_name(signal.SIGSEGV) == "SIGSEGV"
    assert signal_name(signal.SIGKILL) == "SIGKILL"
    assert signal_name(signal.SIGRTMIN + 1) == "SIGRTMIN+1"
    assert signal_name(signal.SIGRTMAX) == "SIGRTMAX"  # the enum names both ends
    # Below SIGRTMIN (reserved by the C library) and past SIGRTMAX: still a name, never None.
    assert signal_name(signal.SIGRTMIN - 1).startswith("SIG")
    assert signal_name(99) == "SIG99"


def test_ending_of_real_statuses():
    assert ending(wait_status(lambda: os._exit(3))) == (3, None)
    assert ending(wait_status(lambda: os.kill(os.getpid(), signal.SIGTERM))) == (None, "SIGTERM")
    assert ending(wait_status(lambda: os.kill(os.getpid(), signal.SIGRTMIN + 1))) == (None, "SIGRTMIN+1")
    assert ending(None) == (None, None)


@pytest.mark.parametrize("killed_for, make, oom, expected", [
    (None, lambda: os._exit(0), False, ("ok", 0, None)),
    (None, lambda: os._exit(1), False, ("runtime_error", 1, None)),
    (None, lambda: os.kill(os.getpid(), signal.SIGSEGV), False, ("runtime_error", None, "SIGSEGV")),
    (None, lambda: os.kill(os.getpid(), signal.SIGKILL), False, ("killed", None, "SIGKILL")),
    (None, lambda: os.kill(os.getpid(), signal.SIGTERM), False, ("killed", None, "SIGTERM")),
    (None, lambda: os.kill(os.getpid(), signal.SIGXCPU), False, ("timeout", None, "SIGXCPU")),
    (None, lambda: os.kill(os.getpid(), signal.SIGKILL), True, ("memory_limit", None, "SIGKILL")),
    ("timeout", lambda: os.kill(os.getpid(), signal.SIGKILL), False, ("timeout", None, "SIGKILL")),
    ("output_limit", lambda: os._exit(0), False, ("output_limit", 0, "SIGKILL")),
    (None, lambda: os.kill(os.getpid(), signal.SIGRTMIN + 1), False, ("runtime_error", None, "SIGRTMIN+1")),
])
def test_classify(killed_for, make, oom, expected):
    assert classify(killed_for, wait_status(make), oom) == expected


def test_classify_unknown_status():
    assert classify("timeout", None, False) == ("timeout", None, "SIGKILL")
    assert classify(None, None, False) == ("runtime_error", None, None)
