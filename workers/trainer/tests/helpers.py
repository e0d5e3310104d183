"""Helpers shared by the tests and the benchmark: server processes, HTTP, batches (no pytest needed)."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURE = os.path.join(REPO, "libs", "grpo", "fixtures", "shared-vectors.json")
START_TIMEOUT = 180.0  # importing torch + transformers on a loaded 2-core machine


def http(method: str, url: str, body=None, timeout: float = 120.0):
    """(status, parsed JSON or text) of one request; HTTP errors are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return status, raw.decode(errors="replace")


class Proc:
    """A server process started with ``python -m``; waits for its ``{"event": "listening"}`` line."""

    def __init__(self, args: list[str], env: dict | None = None, cwd: str | None = None):
        self.args = args
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd=cwd)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.p.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()
        self.url = None

    @staticmethod
    def _pump(stream, q):
        for line in stream:
            q.put(line)
        q.put(None)

    def _pump_err(self):
        for line in self.p.stderr:
            self.stderr.append(line)

    def wait_listening(self, timeout: float = START_TIMEOUT) -> "Proc":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"{self.args} exited ({self.p.wait()}): {''.join(self.stderr)[-3000:]}")
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if ev.get("event") == "listening":
                self.url = ev["url"]
                return self
        raise TimeoutError(f"{self.args} did not start in {timeout}s: {''.join(self.stderr)[-3000:]}")

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


def py(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def wait_result(url: str, run: str, step: int, timeout: float = 300.0):
    """Long-poll GET on a step until it is no longer pending; returns (status, body)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = http("GET", f"{url}/v1/runs/{run}/steps/{step}?wait=30", timeout=90)  # long poll
        if status != 202:
            return status, body
    raise TimeoutError(f"step {run}/{step} still pending after {timeout}s")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def random_sequences(n: int, prompt: int, response: int, vocab: int, seed: int = 0, logprob: float = -7.6) -> list[dict]:
    """Sequences for a v2 batch: random ids, prompt masked, one masked 'tool response' span."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ids = rng.integers(3, vocab, prompt + response).tolist()
        mask = [0] * prompt + [1] * response
        if response >= 8:
            for t in range(prompt + response // 2, prompt + response // 2 + 3):
                mask[t] = 0
        out.append({
            "rolloutId": f"rollout:{seed}:{i}", "groupId": f"group:{seed}:{i // 4}", "tokenIds": ids, "lossMask": mask,
            "oldLogprobs": [logprob if m else 0.0 for m in mask], "advantage": float(rng.normal()), "reward": int(i % 2), "promptLength": prompt,
        })
    return out


def write_batch(path: str, seqs: list[dict], run: str, step: int, version: int) -> str:
    """Write a v2 batch file and return its batchHash."""
    from rstar_trainer.batch import write_v2

    data = write_v2(seqs, run_id=run, step=step, policy_version=version)
    with open(path, "wb") as f:
        f.write(data)
    return sha256(data)


def generate(url: str, ids: list[int], *, max_new: int, seed: int | None = None, temperature: float = 1.0, rid: str | None = None, **extra):
    sp = {"temperature": temperature, "max_new_tokens": max_new, **({"sampling_seed": seed} if seed is not None else {}), **extra}
    body = {"input_ids": ids, "sampling_params": sp, "return_logprob": True, **({"rid": rid} if rid else {})}
    return http("POST", f"{url}/generate", body)


def serve_trainer(model: str, state, env=None) -> "Proc":
    """A trainer worker on a free port over ``model`` with its state in ``state`` (one thread), listening."""
    return Proc(py("rstar_trainer", "serve", "--model", model, "--port", "0", "--state-dir", str(state), "--threads", "1"), env=env).wait_listening()


def wait_file(path: str, proc: "Proc", timeout: float = 300.0) -> None:
    """Wait until ``path`` exists (a worker's hold marker); fails with the worker's stderr if it exits first."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.p.poll() is None, "".join(proc.stderr)[-2000:]
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
