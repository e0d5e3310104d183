"""Weights from the trainer worker's memory into the reference engine over torch.distributed (gloo), and
the behaviour probe: real processes, no mocks. (The same from two FSDP2 ranks: test_fsdp.py, on the
cluster that module starts anyway.)"""

from __future__ import annotations

import os
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import http, random_sequences, wait_result, write_batch

RUN = "ws-run"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def worker(trainer):
    """The session's trainer worker (conftest); this module trains run ``ws-run`` on it."""
    return trainer


@pytest.fixture(scope="module")
def eng(tiny_model, engine):
    """The session's engine (conftest); the tests load other weights into it, so the base model goes
    back in (as version "default") when the module is done."""
    yield engine
    s, r = http("POST", f"{engine.url}/update_weights_from_disk", {"model_path": tiny_model, "weight_version": "default"})
    assert s == 200 and r["success"], r


PROBE = [(i * 7919 + 11) % 490 + 3 for i in range(24)]


def engine_probe(url: str) -> list[float]:
    s, r = http("POST", f"{url}/generate", {"input_ids": PROBE, "return_logprob": True, "logprob_start_len": 0,
                                            "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
    assert s == 200, r
    lps = r["meta_info"]["input_token_logprobs"]
    assert [t for _lp, t, _x in lps] == PROBE and lps[0][0] is None
    return [lp for lp, _t, _x in lps[1:]]


def trainer_probe(url: str, **policy) -> list[float]:
    s, r = http("POST", f"{url}/v1/probe", {"tokenIds": PROBE, **policy})
    assert s == 200, r
    return r["logprobs"]


def worst(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def sync(worker, eng, version: int, bucket_mb: float, group: str) -> dict:
    s, plan = http("POST", f"{worker.url}/v1/weight-sync/plan", {"runId": RUN, "policyVersion": version, "bucketMB": bucket_mb, "dtype": "float32"})
    assert s == 200, plan
    assert plan["groupName"] == group  # the group this worker process joined (null after a restart)
    with ThreadPoolExecutor(2) as ex:
        for k, b in enumerate(plan["buckets"]):
            last = k == len(plan["buckets"]) - 1
            send = ex.submit(http, "POST", f"{worker.url}/v1/weight-sync/buckets/{k}", {"runId": RUN, "policyVersion": version, "bucketMB": bucket_mb, "dtype": "float32", "groupName": group})
            recv = ex.submit(http, "POST", f"{eng.url}/update_weights_from_distributed", {
                "names": b["names"], "dtypes": b["dtypes"], "shapes": b["shapes"], "group_name": group,
                **({"weight_version": str(version), "flush_cache": True} if last else {})})
            assert send.result()[0] == 200, send.result()
            assert recv.result() [0] == 200, recv.result()
    return plan


def test_distributed_sync_matches_the_trainer_and_the_probe_catches_other_weights(worker, eng, tiny_model, tmp_path):
    # Step 0 -> policy version 1 with a large lr, so the engine's base weights are visibly stale.
    seqs = random_sequences(4, 12, 24, 500, seed=3)
    h = write_batch(str(tmp_path / "b0.safetensors"), seqs, RUN, 0, 0)
    s, body = http("PUT", f"{worker.url}/v1/runs/{RUN}/steps/0", {"batchUri": str(tmp_path / "b0.safetensors"), "batchHash": h, "policyVersion": 0, "optimizer": {"lr": 1e-2}})
    assert s == 202, body
    s, res = wait_result(worker.url, RUN, 0)
    assert s == 200 and res["state"] == "done", res

    trained = trainer_probe(worker.url, runId=RUN, policyVersion=1)
    stale = worst(engine_probe(eng.url), trained)
    assert stale > 1e-3, f"the step did not move the weights ({stale})"

    # A policy the trainer does not hold is refused by name.
    s, err = http("POST", f"{worker.url}/v1/weight-sync/plan", {"runId": RUN, "policyVersion": 0})
    assert s == 409 or s == 422, err
    assert err["error"]["field"] == "policyVersion" if "error" in err else err["field"] == "policyVersion"

    group, port = "rstar-ws-test", free_port()
    with ThreadPoolExecutor(2) as ex:
        t = ex.submit(http, "POST", f"{worker.url}/v1/weight-sync/group", {"masterAddress": "127.0.0.1", "masterPort": port, "worldSize": 2, "groupName": group, "backend": "gloo"})
        e = ex.submit(http, "POST", f"{eng.url}/init_weights_update_group", {"master_address": "127.0.0.1", "master_port": port, "rank_offset": 1, "world_size": 2, "group_name": group, "backend": "gloo"})
        assert t.result()[0] == 200, t.result()
        assert e.result()[0] == 200 and e.result()[1]["success"], e.result()

    # Small buckets: the model travels in several.
    plan = sync(worker, eng, 1, 0.25, group)
    assert len(plan["buckets"]) >= 3 and plan["parameters"] > 100_000
    assert all(n != "lm_head.weight" for b in plan["buckets"] for n in b["names"])  # tied: the engine ties it again
    assert worst(engine_probe(eng.url), trained) < 1e-4
    s, wv = http("GET", f"{eng.url}/get_weight_version")
    assert wv["weight_version"] == "1" and wv["manifest_hash"] is None

    # Reloaded behind the run's back from another checkpoint (same tokenizer, other weights): the probe sees it.
    other = tmp_path / "other"
    _perturbed_copy(tiny_model, str(other))
    s, r = http("POST", f"{eng.url}/update_weights_from_disk", {"model_path": str(other)})
    assert s == 200 and r["success"], r
    assert worst(engine_probe(eng.url), trained) > 1e-2

    # One bucket (the default size) puts it right again.
    plan = sync(worker, eng, 1, 512, group)
    assert len(plan["buckets"]) == 1
    assert worst(engine_probe(eng.url), trained) < 1e-4


def _perturbed_copy(src: str, out: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    m.save_pretrained(out)
    for n in os.listdir(src):
        if n.startswith("tokenizer") or n in ("chat_template.jinja", "special_tokens_map.json"):
            shutil.copyfile(os.path.join(src, n), os.path.join(out, n))

