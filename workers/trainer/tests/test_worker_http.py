"""The trainer worker as a real process: routes, idempotence, 409s, named errors, GRPO/SFT/TIS steps."""

import json
import math
import os
import shutil
import subprocess

import pytest

from rstar_trainer.model_io import STABLE, sha256_file, tokenizer_hash

from conftest import http, py, random_sequences, wait_result, write_batch

RUN = "run:http-1"


@pytest.fixture(scope="module")
def worker(trainer):
    """The session's trainer worker (conftest): these tests use run ids of their own on it."""
    return trainer


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    return tmp_path_factory.mktemp("batches")


def put(worker, run, step, body):
    return http("PUT", f"{worker.url}/v1/runs/{run}/steps/{step}", body)


def test_info_and_health(worker, tiny_model):
    s, info = http("GET", f"{worker.url}/v1/info")
    assert s == 200
    cfg = json.load(open(os.path.join(tiny_model, "config.json")))
    assert info["vocabSize"] == cfg["vocab_size"] and 100_000 < info["parameters"] < 1_000_000
    assert info["modelType"] == "qwen2" and info["tiedEmbeddings"] is True
    assert info["tokenizerHash"] == tokenizer_hash(tiny_model)
    assert info["device"] == "cpu" and info["dtype"] == "float32" and info["worldSize"] == 1
    assert info["torch"].startswith("2.") and "hip" in info and "cuda" in info
    assert info["protocols"]["batch"] == ["rstar.grpo-batch/1", "rstar.grpo-batch/2"]
    assert http("GET", f"{worker.url}/healthz") == (200, {"status": "ok", "busy": False})


def test_step_result_repeat_and_conflict(worker, batches, tiny_model):
    seqs = random_sequences(4, 12, 24, 500, seed=1)
    h0 = write_batch(str(batches / "s0.safetensors"), seqs, RUN, 0, 0)
    s, body = put(worker, RUN, 0, {"batchUri": str(batches / "s0.safetensors"), "batchHash": h0, "policyVersion": 0, "optimizer": {"lr": 1e-3}})
    assert s == 202 and body["state"] in ("queued", "running") and body["batchHash"] == h0
    s, res = wait_result(worker.url, RUN, 0)
    assert s == 200, res
    assert res["protocol"] == "rstar.grpo-result/1" and res["state"] == "done"
    assert res["newPolicyVersion"] == 1 and res["policyVersion"] == 0 and res["attempts"] == 1
    assert res["tokens"] == sum(sum(q["lossMask"]) for q in seqs) and res["updates"] == 1
    for k in ("loss", "clipFraction", "approxKl", "entropy", "gradNorm"):
        assert isinstance(res[k], float), k
    drift = res["logprobDrift"]
    assert drift["tokens"] == res["tokens"] and drift["maxAbs"] >= drift["meanAbs"] > 0
    ck = res["checkpoint"]["uri"]
    assert os.path.isfile(os.path.join(ck, STABLE)) and os.path.isfile(os.path.join(ck, "model.safetensors"))
    assert res["checkpoint"]["hash"] == sha256_file(os.path.join(ck, "manifest.json"))
    assert res["checkpoint"]["tokenizerHash"] == tokenizer_hash(tiny_model)
    mtime = os.path.getmtime(os.path.join(ck, "model.safetensors"))

    # The same batch again: the stored result, nothing trained.
    s, again = put(worker, RUN, 0, {"batchUri": str(batches / "s0.safetensors"), "batchHash": h0, "policyVersion": 0})
    assert s == 200 and again == res
    assert os.path.getmtime(os.path.join(ck, "model.safetensors")) == mtime

    # Another batch for the same step: 409 naming both hashes.
    h_other = write_batch(str(batches / "s0b.safetensors"), random_sequences(4, 12, 24, 500, seed=2), RUN, 0, 0)
    s, err = put(worker, RUN, 0, {"batchUri": str(batches / "s0b.safetensors"), "batchHash": h_other, "policyVersion": 0})
    assert s == 409 and err["error"]["code"] == "step_conflict"
    assert err["error"]["storedBatchHash"] == h0 and err["error"]["sentBatchHash"] == h_other
    assert h0 in err["error"]["message"] and h_other in err["error"]["message"]


def test_hash_mismatch_changes_nothing(worker, batches):
    s, run_before = http("GET", f"{worker.url}/v1/runs/{RUN}")
    path = str(batches / "s1x.safetensors")
    good = write_batch(path, random_sequences(4, 12, 24, 500, seed=3), RUN, 1, 1)
    s, err = put(worker, RUN, 1, {"batchUri": path, "batchHash": "f" * 64, "policyVersion": 1})
    assert s == 422 and err["error"]["code"] == "batch_hash_mismatch"
    assert err["error"]["actual"] == good and err["error"]["expected"] == "f" * 64
    assert http("GET", f"{worker.url}/v1/runs/{RUN}/steps/1")[0] == 404
    assert http("GET", f"{worker.url}/v1/runs/{RUN}")[1] == run_before


def test_policy_version_and_request_validation(worker, batches):
    path = str(batches / "s1v.safetensors")
    h = write_batch(path, random_sequences(4, 12, 24, 500, seed=4), RUN, 1, 5)
    s, err = put(worker, RUN, 1, {"batchUri": path, "batchHash": h, "policyVersion": 5})
    assert s == 409 and err["error"]["code"] == "policy_version_mismatch" and "policy version 1" in err["error"]["message"]
    assert put(worker, RUN, 1, {"batchUri": path, "batchHash": "xyz", "policyVersion": 1})[1]["error"]["field"] == "batchHash"
    s, err = put(worker, RUN, 1, {"batchUri": path, "batchHash": h, "policyVersion": 1, "loss": {"kl": 0.1}})
    assert s == 400 and err["error"]["field"] == "loss.kl"
    s, err = put(worker, RUN, 1, {"batchUri": path, "batchHash": h, "policyVersion": 1})
    assert s == 422 and err["error"]["field"] == "policyVersion"  # the file says version 5
    assert http("GET", f"{worker.url}/v1/nope")[0] == 404
    assert put(worker, "../x", 1, {})[0] in (400, 404)


def test_mini_batches_on_policy_start_and_tis(worker, batches):
    run = "run:mini"
    seqs = random_sequences(8, 10, 20, 500, seed=5)
    # One update with pi_old = the trainer's own recomputed logprobs: rho = 1, nothing clipped.
    p0 = str(batches / "m0.safetensors")
    h0 = write_batch(p0, seqs, run, 0, 0)
    assert put(worker, run, 0, {"batchUri": p0, "batchHash": h0, "policyVersion": 0, "loss": {"oldLogprobs": "recomputed"}, "optimizer": {"lr": 0.05, "microBatch": 3}})[0] == 202
    s, r0 = wait_result(worker.url, run, 0)
    assert s == 200 and r0["updates"] == 1
    assert r0["clipFraction"] == 0.0 and r0["approxKl"] < 1e-9
    # Four PPO mini-batches: after the first update the ratio moves, so clipping acts.
    p1 = str(batches / "m1.safetensors")
    h1 = write_batch(p1, seqs, run, 1, 1)
    assert put(worker, run, 1, {"batchUri": p1, "batchHash": h1, "policyVersion": 1, "loss": {"oldLogprobs": "recomputed"}, "optimizer": {"lr": 0.05, "miniBatch": 2, "microBatch": 1}})[0] == 202
    s, r1 = wait_result(worker.url, run, 1)
    assert s == 200 and r1["updates"] == 4 and len(r1["gradNorms"]) == 4
    assert r1["clipFraction"] > 0 and r1["approxKl"] > 0
    # TIS: weights min(exp(recomputed - engine), cap) reported.
    p2 = str(batches / "m2.safetensors")
    h2 = write_batch(p2, seqs, run, 2, 2)
    assert put(worker, run, 2, {"batchUri": p2, "batchHash": h2, "policyVersion": 2, "loss": {"tisCap": 2.0}, "optimizer": {"lr": 1e-3}})[0] == 202
    s, r2 = wait_result(worker.url, run, 2)
    assert s == 200 and r2["tis"]["cap"] == 2.0 and 0 < r2["tis"]["meanWeight"] <= 2.0
    # Decoupled PPO without a cap: the same weights pi_prox / pi_behav, uncapped, rho against the proximal policy.
    p3 = str(batches / "m3.safetensors")
    h3 = write_batch(p3, seqs, run, 3, 3)
    assert put(worker, run, 3, {"batchUri": p3, "batchHash": h3, "policyVersion": 3, "loss": {"decoupled": True}, "optimizer": {"lr": 1e-3}})[0] == 202
    s, r3 = wait_result(worker.url, run, 3)
    assert s == 200 and r3["tis"]["cap"] is None and r3["tis"]["meanWeight"] > 0 and r3["tis"]["cappedFraction"] == 0
    assert r3["clipFraction"] == 0.0 and r3["approxKl"] < 1e-9  # one update: current == proximal


def test_sft_mode(worker, batches, tiny_model):
    run = "run:sft"
    p = str(batches / "sft0.safetensors")
    h = write_batch(p, random_sequences(4, 8, 16, 500, seed=6), run, 0, 0)
    assert put(worker, run, 0, {"batchUri": p, "batchHash": h, "policyVersion": 0, "mode": "sft", "optimizer": {"lr": 1e-2}})[0] == 202
    s, r = wait_result(worker.url, run, 0)
    assert s == 200 and r["mode"] == "sft" and r["newPolicyVersion"] == 1
    assert r["clipFraction"] is None and r["logprobDrift"] is None
    vocab = json.load(open(os.path.join(tiny_model, "config.json")))["vocab_size"]
    assert abs(r["loss"] - math.log(vocab)) < 1.0  # cross-entropy of a near-uniform softmax ~ log(vocab)


def test_bad_model_directories_fail_at_start(tiny_model, tmp_path):
    out = subprocess.run(py("rstar_trainer", "serve", "--model", str(tmp_path / "missing"), "--port", "0"), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert json.loads(out.stderr.strip().splitlines()[-1])["error"]["code"] == "model_dir_invalid"
    no_tok = tmp_path / "no-tokenizer"
    no_tok.mkdir()
    for n in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(os.path.join(tiny_model, n), no_tok / n)
    out = subprocess.run(py("rstar_trainer", "serve", "--model", str(no_tok), "--port", "0"), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    err = json.loads(out.stderr.strip().splitlines()[-1])["error"]
    assert err["code"] == "tokenizer_missing" and "tokenizer" in err["message"]
