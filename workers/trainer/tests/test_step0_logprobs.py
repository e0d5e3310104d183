"""End to end at step 0 (no update yet): rollouts sampled by the reference engine (two model turns around
a masked tool response, rendered with the model's chat template), written as a v2 batch, recomputed by
the trainer worker — every model token's logprob equals the engine's within 1e-4 and rho = 1. This
checks the loss mask and the one-token shift between logits and targets."""

import pytest
from transformers import AutoTokenizer

from conftest import generate, http, wait_result, write_batch


@pytest.fixture(scope="module")
def worker(trainer):
    """The session's trainer worker (conftest); each temperature trains a run of its own from the base model."""
    return trainer


def _rollouts(engine_url, tok, temperature: float, n: int = 4):
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "Put the final answer inside <answer> </answer> as \\boxed{}.\nWhat is 12 + 35?"}],
        tools=[{"name": "python_code_with_standard_io", "parameters": {"type": "object"}}], add_generation_prompt=True, tokenize=False,
    )
    prompt_ids = tok.encode(prompt, add_special_tokens=False)
    tool_ids = tok.encode("\n<|im_start|>user\n<tool_response>\nstdout: 47\n</tool_response><|im_end|>\n<|im_start|>assistant\n<reason>", add_special_tokens=False)
    seqs = []
    for i in range(n):
        s, t1 = generate(engine_url, prompt_ids, max_new=20, seed=1000 + i, temperature=temperature)
        assert s == 200
        ids1 = t1["output_ids"]
        lp1 = [e[0] for e in t1["meta_info"]["output_token_logprobs"]]
        ctx = prompt_ids + ids1 + tool_ids
        s, t2 = generate(engine_url, ctx, max_new=12, seed=2000 + i, temperature=temperature)
        ids2 = t2["output_ids"]
        lp2 = [e[0] for e in t2["meta_info"]["output_token_logprobs"]]
        mask = [0] * len(prompt_ids) + [1] * len(ids1) + [0] * len(tool_ids) + [1] * len(ids2)
        seqs.append({
            "rolloutId": f"rollout:s0:{i}", "groupId": "group:s0:0", "tokenIds": ctx + ids2, "lossMask": mask,
            "oldLogprobs": [0.0] * len(prompt_ids) + lp1 + [0.0] * len(tool_ids) + lp2,
            "advantage": 1.0 if i % 2 == 0 else -1.0, "reward": 1 - i % 2, "promptLength": len(prompt_ids),
        })
    return seqs


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_step0_recomputed_logprobs_equal_the_engines(tiny_model, engine, worker, tmp_path, temperature):
    tok = AutoTokenizer.from_pretrained(tiny_model)
    seqs = _rollouts(engine.url, tok, temperature)
    run = f"run:step0:{temperature}"
    path = str(tmp_path / "b.safetensors")
    h = write_batch(path, seqs, run, 0, 0)
    body = {"batchUri": path, "batchHash": h, "policyVersion": 0, "loss": {"temperature": temperature}, "optimizer": {"lr": 1e-3, "microBatch": 3}}
    assert http("PUT", f"{worker.url}/v1/runs/{run}/steps/0", body)[0] == 202
    s, r = wait_result(worker.url, run, 0)
    assert s == 200, r
    d = r["logprobDrift"]
    model_tokens = sum(sum(q["lossMask"]) for q in seqs)
    assert d["tokens"] == r["tokens"] == model_tokens
    assert d["maxAbs"] < 1e-4, d
    assert abs(d["ratioMin"] - 1) < 1e-4 and abs(d["ratioMax"] - 1) < 1e-4
    assert abs(d["mismatchKl"]) < 1e-8
    # On-policy first (and only) update: nothing is clipped.
    assert r["clipFraction"] == 0.0
