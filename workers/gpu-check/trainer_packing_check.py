"""Packed vs padded on the device: the worker's packed micro-batch (position ids restarting per sequence,
flash-attention varlen where installed, SDPA otherwise; chunked logprobs) against a padded [B, L] batch with
an attention mask and full-vocabulary log-softmax, on the same sequences and weights. Prints one JSON line
with the loss of each, the largest gradient difference relative to the largest gradient, the attention
implementation, and the peak device memory of each pass. Exits 1 when they disagree beyond ``--tol``.

    python trainer_packing_check.py --model DIR [--device cuda] [--dtype fp32|bf16] [--lengths 512,2048,1024,3000]
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="fp32", help="fp32 compares exactly (TF32 off); bf16 shows the kernels' rounding")
    ap.add_argument("--lengths", default="512,2048,1024,3000")
    ap.add_argument("--tol", type=float, default=None, help="largest allowed |loss diff| and relative gradient diff (default 1e-4 fp32, 5e-2 bf16)")
    args = ap.parse_args()

    from rstar_trainer.batch import read_batch_bytes, write_v2
    from rstar_trainer.config import LossConfig
    from rstar_trainer.distributed import DistContext, pick_device
    from rstar_trainer.loss import ppo_token_loss
    from rstar_trainer.packing import pack_sequences, pad_sequences
    from rstar_trainer.policy import PolicyTrainer, attention_implementation, quiet_transformers, resolve_dtype

    quiet_transformers()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = pick_device(args.device, 0)
    dtype = resolve_dtype(args.dtype, device)
    tol = args.tol if args.tol is not None else (1e-4 if dtype == torch.float32 else 5e-2)
    trainer = PolicyTrainer(args.model, DistContext(device=device), dtype)
    trainer.load(args.model)
    model = trainer.model
    vocab = trainer.vocab_size
    rng = np.random.default_rng(0)
    seqs = []
    for i, n in enumerate(int(x) for x in args.lengths.split(",")):
        prompt = min(128, n // 4)
        mask = [0] * prompt + [1] * (n - prompt)
        seqs.append({"rolloutId": f"r{i}", "tokenIds": rng.integers(0, vocab, n).tolist(), "lossMask": mask,
                     "oldLogprobs": [float(-np.log(vocab)) if m else 0.0 for m in mask], "advantage": float(rng.normal())})
    batch = read_batch_bytes(write_v2(seqs, run_id="check", step=0, policy_version=0), "mem")
    cfg = LossConfig()
    n, tokens = batch.num_sequences, batch.num_tokens
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def peak_reset():
        if device.type == "cuda":
            sync()
            torch.cuda.reset_peak_memory_stats(device)

    def peak():
        return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None

    arrays = pack_sequences(batch.token_ids, batch.loss_mask, batch.old_logprobs, batch.seq_offsets, batch.advantages, list(range(n)))
    m = trainer._micro(arrays)
    model.zero_grad(set_to_none=True)
    peak_reset()
    logp, _ = trainer._logprobs(m, 1.0, entropy=True)
    packed = ppo_token_loss(logp, m.old, m.adv, cfg).loss.sum() / tokens
    packed.backward()
    packed_peak = peak()
    g_packed = {k: p.grad.detach().float().clone() for k, p in model.named_parameters() if p.grad is not None}

    ids, attn, mask, old = pad_sequences(batch)
    L = ids.shape[1]
    ids, attn, mask, old = ids.to(device), attn.to(device), mask.to(device), old.to(device)
    model.zero_grad(set_to_none=True)
    # The padded reference runs with SDPA and a padding mask (flash-attention would need unpadding).
    model.set_attn_implementation("sdpa")
    peak_reset()
    with trainer._autocast():
        logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1].float()
    lsm = torch.log_softmax(logits, -1)
    sel = mask[:, 1:].bool()
    ref_logp = lsm.gather(-1, ids[:, 1:, None]).squeeze(-1)[sel]
    adv = torch.tensor(batch.advantages, dtype=torch.float32, device=device)[:, None].expand(n, L - 1)[sel]
    padded = ppo_token_loss(ref_logp, old[:, 1:][sel], adv, cfg).loss.sum() / tokens
    padded.backward()
    padded_peak = peak()
    g_padded = {k: p.grad.detach().float() for k, p in model.named_parameters() if p.grad is not None}
    top = max(float(g.abs().max()) for g in g_padded.values())
    worst = max(float((g_packed[k] - g_padded[k]).abs().max()) for k in g_padded) / max(top, 1e-30)
    loss_diff = abs(float(packed.detach()) - float(padded.detach()))
    ok = loss_diff <= tol and worst <= tol and g_packed.keys() == g_padded.keys()
    print(json.dumps({"check": "packed-vs-padded", "ok": ok, "device": str(device), "dtype": str(dtype).replace("torch.", ""),
                      "attentionPacked": attention_implementation(device, dtype), "attentionPadded": "sdpa",
                      "sequences": n, "tokens": int(attn.sum()), "paddedTokens": n * L, "lossPacked": float(packed.detach()), "lossPadded": float(padded.detach()),
                      "lossDiff": loss_diff, "gradMaxDiffRelative": worst, "tolerance": tol,
                      "peakGiBPacked": packed_peak, "peakGiBPadded": padded_peak}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
