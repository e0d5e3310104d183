"""The reference engine's SGLang memory-occupation pair on a real engine process: released weights are
really dropped (parameters on ``meta``) and read back from the loaded checkpoint, generation and weight
loads are refused while released, and after resuming the engine samples exactly as before."""

from conftest import generate, http


def test_release_refuses_generation_and_resume_restores_the_same_model(tiny_model, engine):
    p = engine  # the session's engine (conftest), serving the base model; left as it was found
    try:
        ids = [5, 17, 42, 99, 3]
        s, before = generate(p.url, ids, max_new=12, seed=7)
        assert s == 200

        s, r = http("POST", f"{p.url}/release_memory_occupation", {"tags": ["weights", "gpu"]})
        assert s == 400 and r["error"]["field"] == "tags"

        s, r = http("POST", f"{p.url}/release_memory_occupation", {})
        assert s == 200 and r["success"] and r["released"] == ["kv_cache", "weights"]
        s, info = http("GET", f"{p.url}/get_server_info")
        assert info["memory_released"] == ["kv_cache", "weights"] and info["weights_on_meta"] is True

        s, r = generate(p.url, ids, max_new=4, seed=7)
        assert s == 503 and r["error"]["code"] == "memory_released"
        s, r = http("POST", f"{p.url}/update_weights_from_disk", {"model_path": tiny_model, "weight_version": "1"})
        assert s == 400 and not r["success"] and "resume_memory_occupation" in r["message"]

        # SGLang's order around an update: weights first (read back from the loaded checkpoint), then the KV cache.
        s, r = http("POST", f"{p.url}/resume_memory_occupation", {"tags": ["weights"]})
        assert s == 200 and r["released"] == ["kv_cache"]
        s, info = http("GET", f"{p.url}/get_server_info")
        assert info["weights_on_meta"] is False
        s, r = generate(p.url, ids, max_new=4, seed=7)
        assert s == 503  # the KV cache is still released
        s, r = http("POST", f"{p.url}/update_weights_from_disk", {"model_path": tiny_model, "weight_version": "1"})
        assert s == 200 and r["success"]
        s, r = http("POST", f"{p.url}/resume_memory_occupation", {"tags": ["kv_cache"]})
        assert s == 200 and r["released"] == []

        s, after = generate(p.url, ids, max_new=12, seed=7)
        assert s == 200
        assert after["output_ids"] == before["output_ids"]
        # Same weights; the freshly allocated storage may be aligned differently, so CPU kernels may round
        # differently in the last bits (seen: 8e-8).
        lp_after = [e[0] for e in after["meta_info"]["output_token_logprobs"]]
        lp_before = [e[0] for e in before["meta_info"]["output_token_logprobs"]]
        assert max(abs(a - b) for a, b in zip(lp_after, lp_before)) < 1e-5
        assert after["meta_info"]["weight_version"] == "1"

        # Without an update in between, resuming reads the loaded checkpoint back: the same samples again.
        assert http("POST", f"{p.url}/release_memory_occupation", {"tags": ["weights"]})[0] == 200
        assert http("POST", f"{p.url}/resume_memory_occupation", {})[0] == 200
        s, again = generate(p.url, ids, max_new=12, seed=7)
        assert s == 200 and again["output_ids"] == before["output_ids"] and again["meta_info"]["weight_version"] == "1"
    finally:
        # Back to the state the other tests expect: everything resumed, the base model as version "default".
        http("POST", f"{p.url}/resume_memory_occupation", {})
        s, r = http("POST", f"{p.url}/update_weights_from_disk", {"model_path": tiny_model, "weight_version": "default"})
        assert s == 200 and r["success"], r
