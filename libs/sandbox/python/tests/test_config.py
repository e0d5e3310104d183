"""The zygote's configuration (rstar_zygote.config) and that importing the package does nothing."""
import json
import subprocess
import sys
import os

from rstar_zygote.config import Config, config_from_env


def test_defaults_and_removal_from_environment():
    env = {"RSTAR_ZYGOTE_CONFIG": json.dumps({"workRoot": "/run/x", "uid": 61000, "pidsMax": 256,
                                              "warmModules": ["scipy.stats"]}), "RSTAR_CG_PROCS": "a b"}
    cfg = config_from_env(env)
    assert env == {}  # no program sees either variable
    assert cfg.work_root == "/run/x" and cfg.call_uid == 61000 and cfg.pids_max == 256
    assert cfg.warm_modules == ["scipy.stats"]
    assert config_from_env({}) == Config()


def test_importing_the_package_does_no_work():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys, rstar_zygote, rstar_zygote.config, rstar_zygote.cell, rstar_zygote.capture, "
            "rstar_zygote.status, rstar_zygote.wipe, rstar_zygote.stateless, rstar_zygote.sessions, "
            "rstar_zygote.warmup, rstar_zygote.forksafety, rstar_zygote.frames, rstar_zygote.callmem, "
            "rstar_zygote.isolation, rstar_zygote.cgroups, rstar_zygote.state\n"
            "print(sorted(m for m in ('numpy', 'sympy', 'scipy') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n"  # the heavy stack is imported by __main__ only
