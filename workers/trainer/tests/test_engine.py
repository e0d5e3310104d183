"""The reference engine as a real process: SGLang and vLLM routes, seeded sampling, stops, abort, KV
capacity (waiting, retraction and recompute) and verified weight reload."""

import json
import os
import shutil
import threading
import time

import pytest
import torch

from rstar_trainer.model_io import sha256_file, write_manifest

from conftest import Proc, generate, http, py, random_sequences

PROMPT = [1, 310, 201, 300]


def test_generate_fields_and_seeded_reproducibility(engine):
    s, a = generate(engine.url, PROMPT, max_new=12, seed=7, rid="g-1")
    assert s == 200
    assert len(a["output_ids"]) == 12 and a["meta_info"]["finish_reason"] == {"type": "length", "length": 12}
    lps = a["meta_info"]["output_token_logprobs"]
    assert [e[1] for e in lps] == a["output_ids"] and all(e[0] < 0 and e[2] is None for e in lps)
    assert a["meta_info"]["id"] == "g-1" and a["meta_info"]["prompt_tokens"] == 4 and a["meta_info"]["weight_version"] == "default"
    assert isinstance(a["text"], str)
    assert generate(engine.url, PROMPT, max_new=12, seed=7)[1]["output_ids"] == a["output_ids"]
    assert generate(engine.url, PROMPT, max_new=12, seed=8)[1]["output_ids"] != a["output_ids"]
    # Batched input: one answer per prompt, seeds seed+i.
    s, many = http("POST", f"{engine.url}/generate", {"input_ids": [PROMPT, PROMPT], "sampling_params": {"max_new_tokens": 12, "sampling_seed": 7}, "return_logprob": True})
    assert s == 200 and len(many) == 2 and many[0]["output_ids"] == a["output_ids"]


def test_stop_token_and_stop_string(engine):
    greedy = generate(engine.url, PROMPT, max_new=10, temperature=0)[1]
    ids = greedy["output_ids"]
    stop_id = ids[2]
    r = generate(engine.url, PROMPT, max_new=10, temperature=0, stop_token_ids=[stop_id])[1]
    k = ids.index(stop_id)
    assert r["output_ids"] == ids[: k + 1] and r["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop_id}
    s, full = http("POST", f"{engine.url}/generate", {"input_ids": PROMPT, "sampling_params": {"temperature": 0, "max_new_tokens": 10, "skip_special_tokens": False}})
    text = full["text"]
    word = next((w for w in text.split() if len(w) >= 2), None)
    if word is None:
        pytest.skip("the greedy text has no multi-character word to stop on")
    r = http("POST", f"{engine.url}/generate", {"input_ids": PROMPT, "sampling_params": {"temperature": 0, "max_new_tokens": 10, "stop": [word], "skip_special_tokens": False}})[1]
    assert r["meta_info"]["finish_reason"] == {"type": "stop", "matched": word}
    assert word not in r["text"] and text.startswith(r["text"])


def test_abort_capacity_errors_and_info(engine):
    out = {}
    t = threading.Thread(target=lambda: out.update(r=generate(engine.url, PROMPT, max_new=3000, seed=1, rid="long-1", ignore_eos=True)))
    t.start()
    deadline = time.monotonic() + 120
    while http("GET", f"{engine.url}/get_server_info")[1]["num_running_reqs"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert http("POST", f"{engine.url}/abort_request", {"rid": "long-1"})[0] == 200
    t.join(120)
    s, r = out["r"]
    assert s == 200 and r["meta_info"]["finish_reason"]["type"] == "abort" and len(r["output_ids"]) < 3000
    s, err = http("POST", f"{engine.url}/generate", {"input_ids": [99999], "sampling_params": {}})
    assert s == 400 and err["error"]["field"] == "input_ids"
    info = http("GET", f"{engine.url}/get_server_info")[1]
    assert info["max_total_num_tokens"] == 8192 and info["internal_states"][0]["max_total_num_tokens"] == 8192
    mi = http("GET", f"{engine.url}/get_model_info")[1]
    assert mi["is_generation"] is True and mi["weight_version"] == "default" and mi["tokenizer_hash"] == info["tokenizer_hash"]
    assert http("GET", f"{engine.url}/health")[0] == 200 and http("POST", f"{engine.url}/flush_cache")[0] == 200


def test_vllm_completions_with_token_ids(engine):
    body = {"model": "x", "prompt": PROMPT, "max_tokens": 6, "temperature": 1.0, "seed": 7, "logprobs": 1,
            "return_tokens_as_token_ids": True, "return_token_ids": True, "skip_special_tokens": False}
    s, r = http("POST", f"{engine.url}/v1/completions", body)
    assert s == 200
    c = r["choices"][0]
    assert c["token_ids"] == generate(engine.url, PROMPT, max_new=6, seed=7)[1]["output_ids"]
    assert c["logprobs"]["tokens"] == [f"token_id:{t}" for t in c["token_ids"]] and len(c["logprobs"]["token_logprobs"]) == 6
    assert c["finish_reason"] == "length" and c["prompt_token_ids"] == PROMPT and r["usage"]["completion_tokens"] == 6
    assert http("GET", f"{engine.url}/v1/models")[1]["data"][0]["object"] == "model"
    metrics = http("GET", f"{engine.url}/metrics")[1]
    assert 'vllm:cache_config_info{block_size="1",num_gpu_blocks="8192"} 1' in metrics


def _crowd(url: str, n: int = 6) -> tuple[dict, int]:
    """n concurrent 64-token requests; returns the answers and the most requests seen waiting at once."""
    results, waiting, done = {}, [0], threading.Event()

    def go(i):
        results[i] = generate(url, PROMPT, max_new=60, seed=100 + i, ignore_eos=True)

    def watch():
        while not done.is_set():
            waiting[0] = max(waiting[0], http("GET", f"{url}/get_server_info")[1]["num_waiting_reqs"])
            time.sleep(0.01)

    w = threading.Thread(target=watch)
    w.start()
    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    done.set()
    w.join()
    return results, waiting[0]


@pytest.mark.parametrize("admission", ["sglang", "reserve"])
def test_kv_capacity_waits_and_retracts_without_changing_outputs(tiny_model, engine, admission):
    small = Proc(py("rstar_trainer.engine", "serve", "--model", tiny_model, "--port", "0", "--kv-capacity-tokens", "200",
                    "--admission", admission, "--threads", "1")).wait_listening()
    try:
        results, most_waiting = _crowd(small.url)
        info = http("GET", f"{small.url}/get_server_info")[1]
        metrics = http("GET", f"{small.url}/metrics")[1]
        s, err = generate(small.url, PROMPT, max_new=300)
        assert s == 400 and err["error"]["code"] == "kv_capacity_exceeded" and "max_total_num_tokens 200" in err["error"]["message"]
    finally:
        small.stop()
    # 6 x 64 tokens do not fit in 200: requests waited; with SGLang's optimistic admission some were also
    # retracted and recomputed, with full reservation none.
    assert most_waiting > 0
    assert info["max_kv_tokens_in_use"] <= 200
    # The counter and capacity the rollout scheduler reads (SGLang's metric names).
    assert f"sglang:num_retracted_requests_total {info['num_retractions']}\n" in metrics and "sglang:max_total_num_tokens 200\n" in metrics
    # The work counters the scheduler bench reads (model forward passes: decode steps and prefill batches).
    assert f"rstar_engine_decode_steps_total {info['decode_steps']}\n" in metrics and f"rstar_engine_prefill_batches_total {info['prefill_batches']}\n" in metrics
    if admission == "sglang":
        assert info["num_retractions"] > 0 and info["num_retracted_tokens"] > 0
    else:
        assert info["num_retractions"] == 0
    assert sum(r[1]["meta_info"]["retraction_count"] for r in results.values()) == info["num_retractions"]
    free = {i: generate(engine.url, PROMPT, max_new=60, seed=100 + i, ignore_eos=True)[1] for i in range(6)}
    for i, (s, r) in results.items():
        assert s == 200 and len(r["output_ids"]) == 60
        assert r["output_ids"] == free[i]["output_ids"]  # seeded: waiting or retraction does not change the sample
        a = [e[0] for e in r["meta_info"]["output_token_logprobs"]]
        b = [e[0] for e in free[i]["meta_info"]["output_token_logprobs"]]
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4


def _checkpoint(tiny_model, out: str, policy_version: int) -> str:
    from rstar_trainer.batch import read_batch_bytes, write_v2
    from rstar_trainer.config import LossConfig, OptimizerConfig
    from rstar_trainer.distributed import DistContext
    from rstar_trainer.policy import PolicyTrainer

    t = PolicyTrainer(tiny_model, DistContext(), torch.float32)
    t.load(tiny_model)
    b = read_batch_bytes(write_v2(random_sequences(4, 4, 16, 500, seed=9), run_id="e", step=0, policy_version=0), "mem")
    t.train_step(b, LossConfig(), OptimizerConfig.parse({"lr": 5e-2}), "sft", 0)
    return t.save(out, out + ".optim.pt", {"policyVersion": policy_version})


def test_weight_reload_reports_version_and_manifest_and_refuses_bad_checkpoints(tiny_model, engine, tmp_path):
    ck = str(tmp_path / "v1")
    digest = _checkpoint(tiny_model, ck, 1)
    before = generate(engine.url, PROMPT, max_new=8, temperature=0)[1]
    # A tampered copy is refused; nothing changes.
    bad = str(tmp_path / "bad")
    shutil.copytree(ck, bad)
    with open(os.path.join(bad, "model.safetensors"), "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(b"\x00\x01\x02\x03")
    s, r = http("POST", f"{engine.url}/update_weights_from_disk", {"model_path": bad})
    assert s == 400 and r["success"] is False and r["code"] == "checkpoint_integrity" and "model.safetensors" in r["message"]
    # Another tokenizer (with a consistent manifest) is refused, naming both hashes.
    other = str(tmp_path / "other-tok")
    shutil.copytree(ck, other)
    os.remove(os.path.join(other, "STABLE"))
    cfg = json.load(open(os.path.join(other, "tokenizer_config.json")))
    cfg["model_max_length"] = 123
    json.dump(cfg, open(os.path.join(other, "tokenizer_config.json"), "w"))
    write_manifest(other, {"policyVersion": 1})
    open(os.path.join(other, "STABLE"), "w").close()
    s, r = http("POST", f"{engine.url}/update_weights_from_disk", {"model_path": other})
    assert s == 400 and "tokenizer hash" in r["message"]
    assert http("GET", f"{engine.url}/get_weight_version")[1]["weight_version"] == "default"
    assert generate(engine.url, PROMPT, max_new=8, temperature=0)[1]["output_ids"] == before["output_ids"]

    s, r = http("POST", f"{engine.url}/update_weights_from_disk", {"model_path": ck, "weight_version": "1"})
    assert s == 200 and r["success"] is True and r["weight_version"] == "1"
    assert r["manifest_hash"] == digest == sha256_file(os.path.join(ck, "manifest.json"))
    after = generate(engine.url, PROMPT, max_new=8, temperature=0)[1]
    assert after["meta_info"]["weight_version"] == "1" and after["output_ids"] != before["output_ids"]
    mi = http("GET", f"{engine.url}/get_model_info")[1]
    assert mi["weight_version"] == "1" and mi["manifest_hash"] == digest and mi["model_path"] == ck
    # Back to the base model (no manifest): version from the request, manifest hash null.
    s, r = http("POST", f"{engine.url}/update_weights_from_disk", {"model_path": tiny_model, "weight_version": "default"})
    assert s == 200 and r["manifest_hash"] is None
    assert generate(engine.url, PROMPT, max_new=8, temperature=0)[1]["output_ids"] == before["output_ids"]
