"""GPU training throughput of the trainer worker's step on a ~0.5B random-initialised Qwen2 (no download).

    bash workers/trainer/bench/gpu.sh [--seq 2048] [--sequences 16] [--micro-batch 4] [--steps 5]
    python workers/trainer/bench/gpu_bench.py --config tiny --device cpu --dtype fp32   # smoke run

The model has Qwen2.5-0.5B's shape (24 layers, hidden 896, 14/2 heads, vocab 151936, tied embeddings)
with random weights; the step is ``PolicyTrainer.train_step`` (the worker's code: bf16 autocast over
fp32 master weights, the PPO-clip loss, AdamW), on a synthetic batch of ``sequences`` x ``seq`` tokens.
Under ``torchrun`` (e.g. 2 processes on one GPU with ``RSTAR_TRAINER_BACKEND=gloo``) the step is FSDP2's and
tokens/s is per rank. MFU = model FLOPs per second / the device's dense bf16 peak, with model FLOPs per token
``6 * N_matmul + 6 * layers * hidden * seq`` (weights of every matmul including the lm_head, forward +
backward; causal attention scores and values). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

# Dense bf16 peak TFLOP/s by device name (vendor data sheets; no sparsity).
PEAKS = [("MI355", 2500.0), ("MI325", 1307.4), ("MI300X", 1307.4), ("MI300A", 980.6), ("MI250", 383.0), ("H200", 989.4),
         ("H100 PCIe", 756.0), ("H100", 989.4), ("H800", 989.4), ("GH200", 989.4), ("B200", 2250.0), ("A100", 312.0), ("L40S", 362.0)]

CONFIGS = {
    "qwen2-0.5b": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                       num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0, tie_word_embeddings=True),
    "tiny": dict(vocab_size=2056, hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=4096, rope_theta=10000.0, tie_word_embeddings=True),
}


def peak_tflops(name: str) -> float | None:
    for key, v in PEAKS:
        if key.lower() in name.lower():
            return v
    return None


def build_model(config_name: str, out: str, dtype: str) -> None:
    """Random-initialised model directory with the hf-tiny tokenizer files (the batch is synthetic ids)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from rstar_trainer.tiny import make_tiny

    tok_dir = os.path.join(os.path.dirname(out), "tok")
    make_tiny(tok_dir, seed=0)
    cfg = Qwen2Config(**CONFIGS[config_name], dtype=dtype)
    torch.manual_seed(0)
    with torch.device("cpu"):
        model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(out)
    for n in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if os.path.exists(os.path.join(tok_dir, n)):
            with open(os.path.join(tok_dir, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="qwen2-0.5b", choices=sorted(CONFIGS))
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--sequences", type=int, default=16)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=None, help="override the device's dense bf16 peak")
    ap.add_argument("--micro-batch-tokens", type=int, default=None, help="packed tokens per micro-batch (default: no cap)")
    ap.add_argument("--build-only", action="store_true", help="build the model directory and exit")
    ap.add_argument("--work-dir", default=None, help="where the random model directory is built (kept for reruns)")
    args = ap.parse_args()

    import numpy as np
    import torch

    from rstar_trainer.batch import read_batch_bytes, write_v2
    from rstar_trainer.config import LossConfig, OptimizerConfig
    from rstar_trainer.distributed import pick_device
    from rstar_trainer.policy import PolicyTrainer, quiet_transformers, resolve_dtype
    from rstar_trainer.distributed import DistContext

    quiet_transformers()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Under torchrun: FSDP2 over the ranks (sharded loading); rank 0 builds the model directory.
        from rstar_trainer.distributed import init_context

        ctx = init_context(args.device)
    else:
        ctx = DistContext(device=pick_device(args.device, 0))
    device = ctx.device
    dtype = resolve_dtype(args.dtype, device)
    model_dir = os.path.join(args.work_dir or tempfile.gettempdir(), f"rstar-gpu-bench-{args.config}", "model")
    if ctx.is_main and not os.path.isfile(os.path.join(model_dir, "config.json")):
        build_model(args.config, model_dir, "bfloat16" if dtype == torch.bfloat16 else "float32")
    ctx.broadcast("built")
    if args.build_only:
        print(json.dumps({"model": model_dir}))
        return 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    trainer = PolicyTrainer(model_dir, ctx, dtype)
    trainer.load(model_dir)
    load_peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    cfg = trainer.model.config
    vocab = int(cfg.vocab_size)
    rng = np.random.default_rng(0)
    seqs = []
    for i in range(args.sequences):
        ids = rng.integers(0, vocab, args.seq).tolist()
        mask = [0] * args.prompt + [1] * (args.seq - args.prompt)
        seqs.append({"rolloutId": f"r{i}", "groupId": "g", "tokenIds": ids, "lossMask": mask,
                     "oldLogprobs": [float(-np.log(vocab)) if m else 0.0 for m in mask], "advantage": float(rng.normal()), "reward": i % 2, "promptLength": args.prompt})
    batch = read_batch_bytes(write_v2(seqs, run_id="gpu", step=0, policy_version=0), "mem")
    opt = OptimizerConfig.parse({"lr": 1e-6, "microBatch": args.micro_batch, "microBatchTokens": args.micro_batch_tokens,
                                 "gradientCheckpointing": args.gradient_checkpointing})
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = []
    for k in range(args.steps + 1):
        sync()
        t0 = time.perf_counter()
        m = trainer.train_step(batch, LossConfig(), opt, "grpo", k)
        sync()
        if k:  # the first step compiles kernels and allocates: not counted
            times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    tokens = batch.total_tokens
    # Tokens per second of this rank's share (each rank trains about 1/world of the batch); MFU per GPU.
    tps = tokens / step_s / ctx.world
    n_matmul = sum(p.numel() for n, p in trainer.model.named_parameters() if p.dim() == 2 and "embed_tokens" not in n)
    if cfg.tie_word_embeddings:
        n_matmul += vocab * cfg.hidden_size  # the tied lm_head is still a matmul
    flops_per_token = 6 * n_matmul + 6 * cfg.num_hidden_layers * cfg.hidden_size * args.seq
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    mfu = (tps * flops_per_token / (peak * 1e12)) if peak else None
    detail = {
        "device": name, "hip": getattr(torch.version, "hip", None), "cuda": torch.version.cuda, "torch": torch.__version__,
        "params": trainer.num_parameters, "matmul_params": n_matmul, "dtype": str(dtype).replace("torch.", ""), "seq": args.seq,
        "sequences": args.sequences, "micro_batch": args.micro_batch, "gradient_checkpointing": args.gradient_checkpointing,
        "step_s": times, "loss": m["loss"], "grad_norm": m["gradNorm"],
        "max_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
        "load_peak_gib": load_peak / 2**30 if load_peak is not None else None, "rank": ctx.rank, "world": ctx.world,
        "attention": trainer.model.config._attn_implementation, "micro_batch_tokens": args.micro_batch_tokens,
    }
    print(json.dumps({"detail": detail}), flush=True)
    if ctx.is_main:
        print(json.dumps({"bench": "trainer-gpu", "device": name, "world": ctx.world, "params": trainer.num_parameters, "tokens_per_s": tps,
                          "model_tflops_per_s": tps * flops_per_token / 1e12, "peak_tflops": peak, "mfu": mfu, "step_s_median": step_s,
                          "max_memory_gib": detail["max_memory_gib"]}), flush=True)
    if ctx.is_dist:
        from rstar_trainer.distributed import shutdown

        shutdown(ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
