"""FSDP2 (``fully_shard``) across two torchrun "nodes" on loopback (``--nnodes 2 --rdzv-backend c10d``,
one gloo process each): the same step gives the same loss, metrics and weights as one process, the
global rank 0 serves HTTP (and /metrics) and the other node's rank follows it; one process resumes the
two ranks' run (checkpoint + sharded AdamW state) to the same weights as an uninterrupted one."""

import os
import socket
import time

import pytest
import torch
from safetensors.torch import load_file

from conftest import Proc, http, py, random_sequences, wait_result, write_batch

# Two updates of three sequences; AdamW's eps raised so that weights whose gradient is ~0 (where summation
# order alone decides the sign) move by at most lr * 1e-2, well inside the 1e-5 tolerance.
BODY = {"optimizer": {"lr": 1e-3, "eps": 1e-6, "microBatch": 2, "miniBatch": 3}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _step(url, run, path, h, step=0):
    s, _ = http("PUT", f"{url}/v1/runs/{run}/steps/{step}", {"batchUri": path, "batchHash": h, "policyVersion": step, **BODY})
    assert s == 202
    s, r = wait_result(url, run, step)
    assert s == 200, r
    return r


def _two_nodes(tiny_model, state_dir) -> tuple[Proc, Proc, Proc]:
    """Two torchrun agents (one process each) meeting at a c10d rendezvous on loopback, as two nodes
    would; returns (the one whose rank 0 serves HTTP, the other, both)."""
    endpoint = f"127.0.0.1:{_free_port()}"
    procs = [
        Proc(py("torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                "--rdzv-id", "fsdp-test", "-m", "rstar_trainer", "serve", "--model", tiny_model, "--host", "127.0.0.1", "--port", "0",
                "--state-dir", state_dir), env={"OMP_NUM_THREADS": "1"})
        for _ in range(2)
    ]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for i, p in enumerate(procs):
            try:
                p.wait_listening(timeout=2)
                return p, procs[1 - i], procs
            except TimeoutError:
                pass
            if p.p.poll() is not None:
                for q in procs:
                    q.stop()
                raise RuntimeError(f"torchrun agent {i} exited: {''.join(p.stderr)[-3000:]}")
    for q in procs:
        q.stop()
    raise TimeoutError("no rank 0 started listening")


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="this torch build has no gloo backend")
def test_two_nodes_match_one_process(tiny_model, tmp_path):
    path = str(tmp_path / "b.safetensors")
    # Sequences of different lengths, so ranks split them by tokens and run packs of different sizes.
    seqs = random_sequences(3, 10, 20, 500, seed=3) + random_sequences(3, 6, 45, 500, seed=4)
    h = write_batch(path, seqs, "fsdp", 0, 0)
    path1 = str(tmp_path / "b1.safetensors")
    h1 = write_batch(path1, random_sequences(4, 8, 30, 500, seed=5), "fsdp", 1, 1)
    leader, follower, both = _two_nodes(tiny_model, str(tmp_path / "dist"))
    try:
        s, info = http("GET", f"{leader.url}/v1/info")
        assert info["worldSize"] == 2 and info["fsdp"] is True and info["nodes"] == 2
        assert follower.url is None  # the other node's rank serves nothing
        rd = _step(leader.url, "fsdp", path, h)
        s, text = http("GET", f"{leader.url}/metrics")
        assert s == 200 and "rstar_trainer_world_size 2.0" in text and "rstar_trainer_steps_done_total 1.0" in text
    finally:
        for p in both:
            p.stop()
    single = Proc(py("rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "one"), "--threads", "1")).wait_listening()
    try:
        r1 = _step(single.url, "fsdp", path, h)
        r1b = _step(single.url, "fsdp", path1, h1, step=1)
    finally:
        single.stop()
    # One process resumes the two-node run at step 1 from its checkpoint and the AdamW state the two ranks
    # wrote sharded: the same weights as the process that ran both steps.
    resumed = Proc(py("rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "dist"), "--threads", "1")).wait_listening()
    try:
        rdb = _step(resumed.url, "fsdp", path1, h1, step=1)
    finally:
        resumed.stop()
    wb = load_file(os.path.join(rdb["checkpoint"]["uri"], "model.safetensors"))
    w1b = load_file(os.path.join(r1b["checkpoint"]["uri"], "model.safetensors"))
    assert max(float((wb[k] - w1b[k]).abs().max()) for k in w1b) < 1e-5
    assert abs(rdb["loss"] - r1b["loss"]) < 1e-5
    assert rd["worldSize"] == 2 and r1["worldSize"] == 1
    assert rd["updates"] == r1["updates"] == 2 and rd["tokens"] == r1["tokens"]
    for k in ("loss", "approxKl", "entropy", "clipFraction"):
        assert abs(rd[k] - r1[k]) < 1e-5, (k, rd[k], r1[k])
    for a, b in zip(rd["gradNorms"], r1["gradNorms"]):
        assert abs(a - b) < 1e-5 * max(1.0, b), (rd["gradNorms"], r1["gradNorms"])
    assert abs(rd["logprobDrift"]["maxAbs"] - r1["logprobDrift"]["maxAbs"]) < 1e-5
    wd = load_file(os.path.join(rd["checkpoint"]["uri"], "model.safetensors"))
    w1 = load_file(os.path.join(r1["checkpoint"]["uri"], "model.safetensors"))
    w0 = load_file(os.path.join(tiny_model, "model.safetensors"))
    assert wd.keys() == w1.keys() == w0.keys()  # the tied lm_head is left out by both
    worst = max(float((wd[k] - w1[k]).abs().max()) for k in w0)
    moved = max(float((w1[k] - w0[k]).abs().max()) for k in w0)
    assert worst < 1e-5, worst
    assert moved > 1e-3  # the weights really moved (two AdamW updates at lr 1e-3)
    # The checkpoint written by rank 0 from the sharded model has the same files as a single process's.
    assert sorted(os.listdir(rd["checkpoint"]["uri"])) == sorted(os.listdir(r1["checkpoint"]["uri"]))


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="this torch build has no gloo backend")
def test_sharded_checkpoint_of_two_ranks_resumes_in_one_process(tiny_model, tmp_path):
    """``checkpoints.every: 1`` on two ranks: each rank writes its shard of the fp32 model and of AdamW
    (DCP); one process reads both back (resharded) and trains the next step to the weights of a process
    that ran both steps."""
    ck = {"checkpoints": {"every": 1}}
    path = str(tmp_path / "b.safetensors")
    h = write_batch(path, random_sequences(4, 8, 20, 500, seed=6), "dcp", 0, 0)
    path1 = str(tmp_path / "b1.safetensors")
    h1 = write_batch(path1, random_sequences(4, 8, 30, 500, seed=7), "dcp", 1, 1)

    def step(url, p, hh, i):
        s, _ = http("PUT", f"{url}/v1/runs/dcp/steps/{i}", {"batchUri": p, "batchHash": hh, "policyVersion": i, **BODY, **ck})
        assert s == 202
        s, r = wait_result(url, "dcp", i)
        assert s == 200, r
        return r

    leader, _follower, both = _two_nodes(tiny_model, str(tmp_path / "dist"))
    try:
        step(leader.url, path, h, 0)
    finally:
        for p in both:
            p.stop()
    shards = sorted(n for n in os.listdir(tmp_path / "dist" / "runs" / "dcp" / "model" / "v1") if n.endswith(".distcp"))
    assert len(shards) == 2  # one file per rank: the model was never gathered to be saved
    assert len([n for n in os.listdir(tmp_path / "dist" / "runs" / "dcp" / "optimizer" / "v1") if n.endswith(".distcp")]) == 2
    single = Proc(py("rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "one"), "--threads", "1")).wait_listening()
    try:
        step(single.url, path, h, 0)
        r1b = step(single.url, path1, h1, 1)
    finally:
        single.stop()
    resumed = Proc(py("rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "dist"), "--threads", "1")).wait_listening()
    try:
        rdb = step(resumed.url, path1, h1, 1)
    finally:
        resumed.stop()
    wb = load_file(os.path.join(rdb["checkpoint"]["uri"], "model.safetensors"))
    w1b = load_file(os.path.join(r1b["checkpoint"]["uri"], "model.safetensors"))
    assert max(float((wb[k] - w1b[k]).abs().max()) for k in w1b) < 1e-5
    assert abs(rdb["loss"] - r1b["loss"]) < 1e-5
