"""Trainer benchmark: train-step tokens/s through the worker (HTTP + v2 batch file + checkpoint) against a
bare PyTorch loop on the same batch in the same run, and the reference engine's generation tokens/s.

    workers/.venv/bin/python workers/trainer/bench/trainer_bench.py [--model DIR] [--steps 6] [--threads 1]

Tokens are all tokens of the batch (prompt, tool response and model tokens: each one goes through the
forward and backward pass). The worker's time per step is wall clock from the PUT to the result (the
batch is written by the bench before the PUT, as the optimization service would); the bare loop runs
the same micro-batches, the same PPO-clip loss, the same metrics (entropy, clip fraction, KL) and
AdamW in this process with no I/O and no checkpoint. Worker and bare
steps alternate so machine load hits both alike; the medians are compared. The last output line is
one JSON object:
``{"bench":"trainer","worker_tokens_per_s":..,"bare_tokens_per_s":..,"protocol_overhead_ratio":..,"engine_tokens_per_s":..}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from helpers import Proc, generate, http, py, random_sequences, wait_result, write_batch  # noqa: E402


def bare_loop(model_dir: str, seqs: list[dict], micro: int, lr: float, threads: int):
    """A plain PyTorch GRPO step on ``seqs``: padded micro-batches, log-softmax gather, PPO-clip with
    clip-higher and dual clip, token-mean, gradient clipping, AdamW. Returns a function that runs one step."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]["tokenIds"]))
    micros = [order[a : a + micro] for a in range(0, len(order), micro)]
    tensors = []
    for mb in micros:
        L = max(len(seqs[i]["tokenIds"]) for i in mb)
        ids = torch.zeros((len(mb), L), dtype=torch.long)
        attn = torch.zeros_like(ids)
        mask = torch.zeros((len(mb), L))
        old = torch.zeros((len(mb), L))
        for r, i in enumerate(mb):
            n = len(seqs[i]["tokenIds"])
            ids[r, :n] = torch.tensor(seqs[i]["tokenIds"])
            attn[r, :n] = 1
            mask[r, :n] = torch.tensor(seqs[i]["lossMask"], dtype=torch.float32)
            old[r, :n] = torch.tensor(seqs[i]["oldLogprobs"])
        adv = torch.tensor([seqs[i]["advantage"] for i in mb])
        tensors.append((ids, attn, mask, old, adv))
    total = sum(sum(s["lossMask"]) for s in seqs)

    def step():
        stats = [0.0, 0.0, 0.0]
        opt.zero_grad(set_to_none=True)
        for ids, attn, mask, old, adv in tensors:
            logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1].float()
            lsm = torch.log_softmax(logits, -1)
            logp = lsm.gather(-1, ids[:, 1:, None]).squeeze(-1)
            m = mask[:, 1:]
            ratio = torch.exp(torch.clamp(logp - old[:, 1:], -20, 20))
            a = adv[:, None]
            unclipped, clipped = -ratio * a, -torch.clamp(ratio, 0.8, 1.28) * a
            pg = torch.maximum(unclipped, clipped)
            pg = torch.where((a < 0) & (-3 * a < pg), -3 * a, pg)
            ((pg * m).sum() / total).backward()
            with torch.no_grad():  # the metrics every RL trainer reports: entropy, clip fraction, KL
                r = ratio.detach()
                stats[0] += float((-(lsm.exp() * lsm).sum(-1) * m).sum())
                stats[1] += float(((clipped > unclipped) * m).sum())
                stats[2] += float((((r - 1) - torch.log(r)) * m).sum())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return step


def engine_tokens_per_s(model_dir: str, threads: int, concurrency: int, max_new: int) -> tuple[float, dict]:
    eng = Proc(py("rstar_trainer.engine", "serve", "--model", model_dir, "--port", "0", "--kv-capacity-tokens", "65536", "--threads", str(threads))).wait_listening()
    try:
        generate(eng.url, [1, 2, 3], max_new=8, seed=0, ignore_eos=True)  # warm-up
        results = []

        def go(i):
            s, r = generate(eng.url, [1, 100, 200, 10 + i], max_new=max_new, seed=i, ignore_eos=True)
            if s != 200:
                raise RuntimeError(f"engine answered {s}: {r}")
            results.append(r)

        t0 = time.perf_counter()
        ths = [threading.Thread(target=go, args=(i,)) for i in range(concurrency)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        wall = time.perf_counter() - t0
        info = http("GET", f"{eng.url}/get_server_info")[1]
    finally:
        eng.stop()
    tokens = sum(len(r["output_ids"]) for r in results)
    return tokens / wall, {"engine_requests": concurrency, "engine_tokens": tokens, "engine_wall_s": wall, "engine_decode_steps": info["decode_steps"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="model directory (default: build hf-tiny in a temp dir)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--sequences", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--response", type=int, default=448)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--engine-concurrency", type=int, default=16)
    ap.add_argument("--engine-max-new", type=int, default=128)
    args = ap.parse_args()

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    tmp = tempfile.mkdtemp(prefix="rstar-trainer-bench-")
    model = args.model
    if model is None:
        from rstar_trainer.tiny import make_tiny

        model = os.path.join(tmp, "hf-tiny")
        make_tiny(model, seed=0)
    import json as _json

    vocab = _json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    seqs = random_sequences(args.sequences, args.prompt, args.response, vocab, seed=1)
    all_tokens = sum(len(s["tokenIds"]) for s in seqs)
    lr = 1e-5

    worker = Proc(py("rstar_trainer", "serve", "--model", model, "--port", "0", "--state-dir", os.path.join(tmp, "state"), "--threads", str(args.threads))).wait_listening()
    step_bare = bare_loop(model, seqs, args.micro_batch, lr, args.threads)
    run = "bench"
    worker_s, bare_s, inside_s = [], [], []
    try:
        for k in range(args.steps + 1):  # step 0 warms both up and is not counted
            path = os.path.join(tmp, f"batch-{k}.safetensors")
            h = write_batch(path, seqs, run, k, k)
            t0 = time.perf_counter()
            s, _ = http("PUT", f"{worker.url}/v1/runs/{run}/steps/{k}", {"batchUri": path, "batchHash": h, "policyVersion": k, "optimizer": {"lr": lr, "microBatch": args.micro_batch}})
            assert s == 202, _
            s, res = wait_result(worker.url, run, k)
            assert s == 200, res
            wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            step_bare()
            bare = time.perf_counter() - t0
            if k:
                worker_s.append(wall)
                bare_s.append(bare)
                inside_s.append(res["trainSeconds"])
    finally:
        worker.stop()
    w, b = statistics.median(worker_s), statistics.median(bare_s)
    eng_tps, eng = engine_tokens_per_s(model, args.threads, args.engine_concurrency, args.engine_max_new)
    detail = {
        "batch_tokens": all_tokens, "sequences": args.sequences, "steps": args.steps, "threads": args.threads,
        "worker_step_s_median": w, "worker_train_s_median": statistics.median(inside_s), "bare_step_s_median": b,
        "worker_step_s": worker_s, "bare_step_s": bare_s, **eng,
    }
    print(json.dumps({"detail": detail}))
    print(json.dumps({"bench": "trainer", "worker_tokens_per_s": all_tokens / w, "bare_tokens_per_s": all_tokens / b,
                      "protocol_overhead_ratio": b / w, "engine_tokens_per_s": eng_tps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
