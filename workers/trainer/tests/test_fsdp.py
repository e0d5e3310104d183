"""FSDP2 (``fully_shard``) under torchrun with two gloo processes on CPU: the same step gives the same
loss, metrics and weights as one process (up to float summation order)."""

import os
import socket

import pytest
import torch
from safetensors.torch import load_file

from conftest import Proc, http, py, random_sequences, wait_result, write_batch

BODY = {"optimizer": {"lr": 1e-2, "microBatch": 2, "miniBatch": 3}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _step(url, run, path, h):
    s, _ = http("PUT", f"{url}/v1/runs/{run}/steps/0", {"batchUri": path, "batchHash": h, "policyVersion": 0, **BODY})
    assert s == 202
    s, r = wait_result(url, run, 0)
    assert s == 200, r
    return r


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="this torch build has no gloo backend")
def test_two_gloo_ranks_match_one_process(tiny_model, tmp_path):
    path = str(tmp_path / "b.safetensors")
    h = write_batch(path, random_sequences(6, 10, 20, 500, seed=3), "fsdp", 0, 0)
    env = {"OMP_NUM_THREADS": "1"}
    dist = Proc(
        py("torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(_free_port()),
           "-m", "rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "dist")),
        env=env,
    ).wait_listening()
    try:
        s, info = http("GET", f"{dist.url}/v1/info")
        assert info["worldSize"] == 2 and info["fsdp"] is True
        rd = _step(dist.url, "fsdp", path, h)
    finally:
        dist.stop()
    single = Proc(py("rstar_trainer", "serve", "--model", tiny_model, "--port", "0", "--state-dir", str(tmp_path / "one"), "--threads", "1")).wait_listening()
    try:
        r1 = _step(single.url, "fsdp", path, h)
    finally:
        single.stop()
    assert rd["worldSize"] == 2 and r1["worldSize"] == 1
    assert rd["updates"] == r1["updates"] == 2 and rd["tokens"] == r1["tokens"]
    for k in ("loss", "approxKl", "entropy", "clipFraction"):
        assert abs(rd[k] - r1[k]) < 1e-5, (k, rd[k], r1[k])
    for a, b in zip(rd["gradNorms"], r1["gradNorms"]):
        assert abs(a - b) < 1e-4 * max(1.0, b)
    assert abs(rd["logprobDrift"]["maxAbs"] - r1["logprobDrift"]["maxAbs"]) < 1e-5
    wd = load_file(os.path.join(rd["checkpoint"]["uri"], "model.safetensors"))
    w1 = load_file(os.path.join(r1["checkpoint"]["uri"], "model.safetensors"))
    w0 = load_file(os.path.join(tiny_model, "model.safetensors"))
    assert wd.keys() == w1.keys() == w0.keys()  # the tied lm_head is left out by both
    # AdamW's first steps move each weight by about lr * g / (|g| + eps): where g is near 0, summation
    # order alone changes the step, so compare the updates as a whole rather than weight by weight.
    dd = torch.cat([(wd[k] - w0[k]).flatten() for k in w0])
    d1 = torch.cat([(w1[k] - w0[k]).flatten() for k in w0])
    rel = float((dd - d1).norm() / d1.norm())
    assert rel < 1e-4, rel
    # The checkpoint written by rank 0 from the sharded model has the same files as a single process's.
    assert sorted(os.listdir(rd["checkpoint"]["uri"])) == sorted(os.listdir(r1["checkpoint"]["uri"]))
