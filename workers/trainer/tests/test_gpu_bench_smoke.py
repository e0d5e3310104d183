"""The GPU benchmark script runs end to end (here on CPU with the tiny config), so it does not rot on
machines without a GPU."""

import json
import os
import subprocess
import sys

from helpers import REPO


def test_gpu_bench_runs_on_cpu_with_the_tiny_config():
    script = os.path.join(REPO, "workers", "trainer", "bench", "gpu_bench.py")
    out = subprocess.run(
        [sys.executable, script, "--config", "tiny", "--device", "cpu", "--dtype", "fp32", "--seq", "96", "--prompt", "16", "--sequences", "2", "--steps", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["bench"] == "trainer-gpu" and last["tokens_per_s"] > 0 and last["params"] == 230464
    assert last["mfu"] is None  # no peak is known for a CPU
