"""Bytes per parameter of each checkpoint kind the trainer worker writes, measured on a real model.

    workers/.venv/bin/python workers/trainer/bench/checkpoint_bytes.py [--layers 16] [--hidden 768]

Builds a random Qwen2 (make-tiny's tokenizer, the given shape; its config says bfloat16 as released
models do), runs one GRPO step through :class:`PolicyTrainer` on CPU so the AdamW state exists, then
writes with the worker's own code: the sharded model (:func:`.checkpoints.save_sharded`: fp32 master
weights, DCP), the sharded AdamW state (DCP) and the Hugging Face export (``PolicyTrainer.save``:
safetensors in the config dtype, tokenizer, manifest). The last output line is one JSON object:
``{"bench":"checkpoint-bytes","params":..,"model_bytes_per_param":..,"optimizer_bytes_per_param":..,"export_bytes_per_param":..}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from helpers import random_sequences, write_batch  # noqa: E402


def tree_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(path) for f in fs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--intermediate", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    import torch

    from rstar_trainer.batch import load_batch
    from rstar_trainer.checkpoints import save_sharded
    from rstar_trainer.config import LossConfig, OptimizerConfig
    from rstar_trainer.distributed import DistContext
    from rstar_trainer.policy import PolicyTrainer
    from rstar_trainer.tiny import make_tiny

    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model")
        make_tiny(model, hidden_size=a.hidden, layers=a.layers, heads=12, kv_heads=4, intermediate_size=a.intermediate)
        cfg_path = os.path.join(model, "config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        cfg["dtype"] = cfg["torch_dtype"] = "bfloat16"
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        ctx = DistContext()
        trainer = PolicyTrainer(model, ctx, torch.float32)
        trainer.load(model)
        params = trainer.num_parameters
        bpath = os.path.join(tmp, "b.safetensors")
        digest = write_batch(bpath, random_sequences(4, 16, 16, 500, seed=1), "bytes", 0, 0)
        trainer.train_step(load_batch(bpath, digest), LossConfig.parse(None), OptimizerConfig.parse({"lr": 1e-5}), "grpo", 0)
        mdir, odir, hdir = (os.path.join(tmp, n) for n in ("model-v1", "optimizer-v1", "export-v1"))
        save_sharded(trainer.model, trainer.optim, mdir, odir, ctx)
        trainer.save(hdir, None, {"runId": "bytes", "policyVersion": 1})
        sizes = {k: tree_bytes(p) for k, p in (("model", mdir), ("optimizer", odir), ("export", hdir))}
        tok_bytes = sum(os.path.getsize(os.path.join(hdir, n)) for n in os.listdir(hdir) if not n.endswith(".safetensors"))
    out = {"bench": "checkpoint-bytes", "params": params, **{f"{k}_bytes": v for k, v in sizes.items()},
           "export_non_weight_bytes": tok_bytes,
           **{f"{k}_bytes_per_param": round(v / params, 3) for k, v in sizes.items()}}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
