"""``python -m rstar_trainer.load_memory --model DIR``: peak resident memory of loading a model, per rank.

Run it alone (one process: ``from_pretrained``) or under ``torchrun`` (sharded loading). Each rank
prints one JSON line ``{"event": "load-memory", rank, world, peakBytes, parameters, fp32Bytes}``.

The measure is the kernel's own: the peak resident set size (``VmHWM`` in ``/proc/self/status``),
reset with ``echo 5 > /proc/self/clear_refs`` after torch, transformers and the process group are up,
minus the resident size at that moment. Resident pages are what a process really holds — every
tensor's storage that was written, whichever allocator made it, plus any mmap'd checkpoint pages it
touched — so a rank that materialised the full model, even for an instant, shows it. After loading, every
weight the rank holds is read once (as the first forward pass would), so lazily mapped weights count too. (tracemalloc sees
only Python's allocator; torch's CPU allocator keeps no peak statistics.) Linux only; where
``clear_refs`` cannot be written the peak since the process started is used, which can only overstate.
"""

from __future__ import annotations

import argparse
import json
import sys


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_peak() -> bool:
    """Reset the kernel's peak RSS of this process to the current RSS; False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rstar_trainer.load_memory")
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)

    import gc

    import torch
    import transformers  # noqa: F401 - imported before the baseline, as the worker has it
    from transformers import AutoConfig, AutoModelForCausalLM  # noqa: F401

    from .distributed import init_context, shutdown
    from .policy import PolicyTrainer, quiet_transformers

    quiet_transformers()
    torch.set_num_threads(1)
    ctx = init_context(args.device)
    config = AutoConfig.from_pretrained(args.model)
    # Import the architecture's modeling module before the baseline (a one-off cost, not the load's).
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    trainer = PolicyTrainer(args.model, ctx, torch.float32)
    gc.collect()
    exact = reset_peak()
    base = _status_kib("VmRSS")
    trainer.load(args.model)
    # Read every weight this rank holds once, as the first forward pass will: a loader that only mapped
    # the checkpoint (from_pretrained maps safetensors lazily) is charged for what it holds, not less.
    with torch.no_grad():
        for p in trainer.model.parameters():
            t = p.to_local() if hasattr(p, "to_local") else p
            float(t.float().sum()) if t.numel() else None
    peak = _status_kib("VmHWM")
    params = trainer.num_parameters
    print(json.dumps({"event": "load-memory", "rank": ctx.rank, "world": ctx.world, "peakBytes": (peak - base) * 1024,
                      "parameters": params, "fp32Bytes": params * 4, "peakReset": exact}), flush=True)
    if ctx.is_dist:
        torch.distributed.barrier()
    shutdown(ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
