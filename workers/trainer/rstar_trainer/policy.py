"""The policy being trained: load, one GRPO-RoC or SFT step, save.

One step (``PolicyTrainer.train_step``):

1. the batch's sequences are cut into mini-batches (``optimizer.miniBatch`` sequences, one optimizer
   update each, verl's ``ppo_mini_batch_size``); the ranks share each mini-batch's sequences by tokens
   and run them as packed micro-batches without padding (gradient accumulation; :mod:`.packing`), with
   log-probabilities and entropies formed a chunk of rows at a time (:mod:`.logprob`);
2. before any update the trainer recomputes log pi(token | prefix) of every model token (the logprob
   drift against the engine's ``old_logprobs`` is reported; with TIS, decoupled PPO or ``oldLogprobs:
   recomputed`` those recomputed values are pi_old, the proximal policy of decoupled PPO, and the engine's
   are the behaviour policy that sampled each token, :func:`.loss.decoupled_token_loss`). When one update covers the whole batch and the engine's
   logprobs are pi_old, the first forward pass of the update *is* that recompute (the weights have not
   moved yet) and no extra pass runs;
3. loss per token (docs/design/protocol.md §6, :func:`ppo_token_loss`) summed and divided by the mini-batch's model
   tokens over all ranks (token-mean); gradients clipped to ``gradClip``; AdamW with the warm-up lr.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import time
from dataclasses import dataclass

import numpy as np
import torch

from .batch import TrainingBatch
from .config import LossConfig, OptimizerConfig
from .distributed import DistContext
from .errors import ModelDirError, RequestError
from .logprob import DEFAULT_CHUNK_BYTES, LogprobHead, LogprobRequest, chunk_rows_for, install_logprob_head
from .loss import decoupled_token_loss, ppo_token_loss
from .optim_state import load_optimizer, save_optimizer
from .checkpoints import weights_digest
from .model_io import copy_tokenizer_files, mark_stable, validate_model_dir, write_manifest
from .packing import PackedArrays, filler_pack, pack_sequences, plan_micro_batches


def quiet_transformers() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from transformers.utils import logging as tlog

    tlog.set_verbosity_error()
    tlog.disable_progress_bar()


def resolve_dtype(option: str, device: torch.device) -> torch.dtype:
    """Compute dtype: ``auto`` = bf16 on an accelerator, fp32 on CPU. Master weights and AdamW state
    stay fp32 either way."""
    if option == "auto":
        return torch.bfloat16 if device.type != "cpu" else torch.float32
    table = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}
    if option not in table:
        raise RequestError(f"--dtype must be auto, fp32 or bf16, got {option!r}", "dtype")
    return table[option]


@dataclass
class Micro:
    """One packed micro-batch on the device (see :class:`.packing.PackedArrays`); ``weight`` 0 marks a
    filler that only keeps this rank's collectives in step with the others."""

    idx: list[int]
    ids: torch.Tensor
    pos: torch.Tensor
    rows: torch.Tensor
    targets: torch.Tensor
    old: torch.Tensor
    adv: torch.Tensor
    counts: list[int]
    weight: float = 1.0


def attention_implementation(device: torch.device, dtype: torch.dtype = torch.bfloat16) -> str:
    """flash-attention 2 (varlen over the packed sequences) on a GPU where the package is installed and
    the compute dtype is 16-bit (its kernels have no fp32), else PyTorch SDPA with the block-diagonal
    causal mask transformers derives from the position ids."""
    import importlib.util

    if device.type == "cuda" and dtype in (torch.bfloat16, torch.float16) and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


class PolicyTrainer:
    """Holds the model and its AdamW optimizer on this rank. ``base_dir`` is the model the run starts
    from (its tokenizer files are copied into every checkpoint)."""

    def __init__(self, base_dir: str, ctx: DistContext, dtype: torch.dtype):
        validate_model_dir(base_dir)
        self.base_dir = base_dir
        self.ctx = ctx
        self.dtype = dtype
        self.model = None
        self.optim = None
        self.save_dtype = torch.float32
        self.loaded_from: str | None = None
        self.num_parameters = 0
        self.last_weights_digest = ""
        self.vocab_size = 0
        self.head: LogprobHead | None = None
        # Largest fp32 logits block the logprob head forms at once (rows x vocabulary x 4 bytes).
        self.logprob_chunk_bytes = DEFAULT_CHUNK_BYTES

    # ----------------------------------------------------------------- load

    def load(self, weights_dir: str, optimizer_file: str | None = None) -> None:
        """Build the model from ``weights_dir`` (fp32 master weights) and a fresh AdamW, restoring its state
        from ``optimizer_file`` (a sharded DCP directory written with any world size, :mod:`.optim_state`).

        One process: ``from_pretrained``. Under torchrun: the model is built with its parameters on the
        ``meta`` device, ``fully_shard``-ed (one FSDP2 group per decoder layer, the root holding the
        embeddings and the possibly tied ``lm_head``), given storage for this rank's shard only, and each
        shard is read from the safetensors files (:mod:`.sharded_load`): no rank holds the full model."""
        from transformers import AutoConfig, AutoModelForCausalLM

        quiet_transformers()
        validate_model_dir(weights_dir, need_tokenizer=False)
        config = AutoConfig.from_pretrained(weights_dir)
        base_dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        if isinstance(base_dtype, str):
            base_dtype = getattr(torch, base_dtype, torch.float32)
        self.save_dtype = base_dtype if isinstance(base_dtype, torch.dtype) else torch.float32
        attn = attention_implementation(self.ctx.device, self.dtype)
        # Drop the previous weights and optimizer state first: a reload must not hold two models.
        self.model = self.optim = None
        if self.ctx.is_dist:
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

            from .sharded_load import load_sharded, parameters_on_meta

            with parameters_on_meta():
                model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation=attn)
            buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
            mp = MixedPrecisionPolicy(param_dtype=self.dtype, reduce_dtype=torch.float32) if self.dtype != torch.float32 else MixedPrecisionPolicy()
            # One FSDP group per decoder layer (Qwen2/Llama-style `model.layers`), so only one layer's
            # full weights are gathered at a time.
            for layer in getattr(getattr(model, "model", None), "layers", []):
                fully_shard(layer, mp_policy=mp)
            fully_shard(model, mp_policy=mp)
            model.to_empty(device=self.ctx.device)
            # to_empty gave the buffers fresh (garbage) storage too: put back the values __init__ computed.
            with torch.no_grad():
                for n, b in model.named_buffers():
                    b.copy_(buffers[n])
            try:
                load_sharded(model, weights_dir, self.ctx.rank, self.ctx.world)
            except OSError as e:
                raise ModelDirError(f"cannot read the weights in {weights_dir!r}: {e}", "model") from e
        else:
            try:
                model = AutoModelForCausalLM.from_pretrained(weights_dir, dtype=torch.float32, attn_implementation=attn)
            except (OSError, ValueError) as e:
                raise ModelDirError(f"cannot load a causal LM from {weights_dir!r}: {e}", "model") from e
            model.to(self.ctx.device)
        model.config.use_cache = False
        self.head = install_logprob_head(model)
        self.num_parameters = sum(p.numel() for p in model.parameters())
        self.vocab_size = int(model.config.vocab_size)
        model.train()
        self.model = model
        self.optim = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.01)
        if optimizer_file:
            load_optimizer(model, self.optim, optimizer_file, self.ctx)
        self.loaded_from = weights_dir

    # ------------------------------------------------------------ batching

    def _autocast(self):
        if self.ctx.is_dist or self.dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.ctx.device.type, dtype=self.dtype)

    def _set_checkpointing(self, on: bool) -> None:
        """Activation (gradient) checkpointing of the decoder layers: recompute activations in the
        backward pass instead of keeping them (less memory, ~1/3 more compute)."""
        m = self.model
        if on == getattr(self, "_checkpointing", False):
            return
        if on:
            if hasattr(m, "activation_checkpointing_enable"):  # transformers >= 5 (the old name is deprecated)
                m.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        else:
            (getattr(m, "activation_checkpointing_disable", None) or m.gradient_checkpointing_disable)()
        self._checkpointing = on

    def check_vocab(self, batch: TrainingBatch) -> None:
        """Refuse token ids outside the model's vocabulary (:class:`RequestError` on ``batchUri``)."""
        top = int(batch.token_ids.max())
        if top >= self.vocab_size:
            raise RequestError(f"batch token id {top} is outside the model's vocabulary ({self.vocab_size}); the batch was sampled with another tokenizer or model", "batchUri")

    def _micro(self, arrays: PackedArrays, weight: float = 1.0) -> Micro:
        d = self.ctx.device
        return Micro(
            idx=arrays.seqs,
            ids=torch.from_numpy(arrays.ids)[None].to(d),
            pos=torch.from_numpy(arrays.pos)[None].to(d),
            rows=torch.from_numpy(arrays.rows).to(d),
            targets=torch.from_numpy(arrays.targets).to(d),
            old=torch.from_numpy(arrays.old).to(d, torch.float32),
            adv=torch.from_numpy(arrays.adv).to(d, torch.float32),
            counts=arrays.counts,
            weight=weight,
        )

    def plan(self, batch: TrainingBatch, seqs: list[int], cfg: OptimizerConfig) -> list[list[list[int] | None]]:
        """Packed micro-batches of every rank for the sequences ``seqs`` (``plan[rank][k]``: sequence ids,
        or None for a filler), balanced by tokens across ranks (:func:`.packing.plan_micro_batches`) and
        cut at ``microBatch`` sequences and ``microBatchTokens`` tokens."""
        offs = batch.seq_offsets
        lengths = {i: int(offs[i + 1] - offs[i]) for i in seqs}
        return plan_micro_batches(lengths, self.ctx.world, cfg.micro_batch, cfg.micro_batch_tokens)

    def _rank_micros(self, batch: TrainingBatch, seqs: list[int], cfg: OptimizerConfig):
        """This rank's packed micro-batches; every rank yields the same number."""
        for pack in self.plan(batch, seqs, cfg)[self.ctx.rank]:
            if pack is None:
                yield self._micro(filler_pack(batch.token_ids, batch.seq_offsets), weight=0.0)
            else:
                yield self._micro(pack_sequences(batch.token_ids, batch.loss_mask, batch.old_logprobs, batch.seq_offsets, batch.advantages, pack))

    # -------------------------------------------------------------- forward

    def _logprobs(self, m: Micro, temperature: float, entropy: bool):
        """log pi(token | prefix) of the model tokens of the pack ``m`` (1-D, in pack order) and the
        entropy of the predicted distribution there (detached; None unless ``entropy``). The packed
        sequences do not see each other (position ids restart at 0; see :mod:`.packing`); logits are
        never formed for the whole pack (:mod:`.logprob`)."""
        vocab = self.vocab_size
        self.head.logprob_request = LogprobRequest(m.rows, m.targets, temperature, chunk_rows_for(vocab, self.logprob_chunk_bytes))
        try:
            with self._autocast():
                out = self.model(input_ids=m.ids, position_ids=m.pos, use_cache=False)
        finally:
            self.head.logprob_request = None
        res = out.logits[0]
        return res[:, 0], (res[:, 1].detach() if entropy else None)

    # ----------------------------------------------------------------- step

    def train_step(self, batch: TrainingBatch, loss: LossConfig, opt: OptimizerConfig, mode: str, trained_steps: int) -> dict:
        """Run one RL step (``mode`` ``grpo``) or SFT step (``sft``) on ``batch``; return its metrics.
        Collective under torchrun: every rank calls it with the same arguments."""
        t0 = time.perf_counter()
        model, ctx = self.model, self.ctx
        self.check_vocab(batch)
        self._set_checkpointing(opt.gradient_checkpointing)
        lr = opt.lr_at(trained_steps)
        for g in self.optim.param_groups:
            g.update(lr=lr, weight_decay=opt.weight_decay, betas=opt.betas, eps=opt.eps)

        n = batch.num_sequences
        mb = opt.mini_batch or n
        minis = [list(range(a, min(n, a + mb))) for a in range(0, n, mb)]
        updates = len(minis) * opt.ppo_epochs
        grpo = mode == "grpo"
        need_recompute = grpo and (updates > 1 or loss.old_logprobs == "recomputed")
        dev = ctx.device
        f64 = torch.float64
        # Sums over this rank's model tokens; reduced over ranks at the end.
        acc = {k: torch.zeros((), dtype=f64, device=dev) for k in ("loss", "clipped", "dual", "kl", "entropy", "tokens", "d_abs", "d_kl", "tis_w", "tis_cap", "d_tokens")}
        d_max = torch.zeros((), dtype=f64, device=dev)
        r_min = torch.full((), math.inf, dtype=f64, device=dev)
        r_max = torch.full((), -math.inf, dtype=f64, device=dev)
        recomputed: dict[int, torch.Tensor] = {}

        def drift(m: Micro, logp: torch.Tensor):
            nonlocal d_max, r_min, r_max
            if m.weight == 0:
                return
            eng = m.old.to(f64)
            lp = logp.detach().to(f64)
            diff = lp - eng
            acc["d_abs"] += diff.abs().sum()
            acc["d_tokens"] += diff.numel()
            # k3 estimate of KL(engine || trainer) on the engine's samples, with r = pi_trainer / pi_engine.
            r = torch.exp(diff.clamp(-20, 20))
            acc["d_kl"] += ((r - 1) - diff.clamp(-20, 20)).sum()
            if diff.numel():
                d_max = torch.maximum(d_max, diff.abs().max())
                r_min = torch.minimum(r_min, r.min())
                r_max = torch.maximum(r_max, r.max())

        if need_recompute:
            with torch.no_grad():
                for mini in minis:
                    for m in self._rank_micros(batch, mini, opt):
                        logp, _e = self._logprobs(m, loss.temperature, entropy=False)
                        drift(m, logp)
                        if m.weight:
                            self._store_rows(recomputed, m, logp)

        grad_norms: list[float] = []
        skipped = 0
        first = True
        for _epoch in range(opt.ppo_epochs):
            for mini in minis:
                mini_tokens = int(sum(batch.loss_mask[batch.seq_offsets[i] : batch.seq_offsets[i + 1]].sum() for i in mini))
                denom = max(1, mini_tokens)
                self.optim.zero_grad(set_to_none=True)
                for m in self._rank_micros(batch, mini, opt):
                    logp, ent = self._logprobs(m, loss.temperature, entropy=True)
                    if grpo and first and not need_recompute:
                        drift(m, logp)
                    adv = m.adv
                    if grpo:
                        eng = m.old
                        if loss.old_logprobs == "recomputed":
                            base = self._rows(recomputed, m, logp)
                        else:
                            base = eng
                        if loss.decoupled:
                            # Decoupled PPO: base = proximal (recomputed), eng = behaviour logprobs.
                            terms, w = decoupled_token_loss(logp, base, eng, adv, loss)
                            if m.weight:
                                acc["tis_w"] += w.sum().to(f64)
                                if loss.tis_cap is not None:
                                    acc["tis_cap"] += (w >= loss.tis_cap).sum().to(f64)
                        else:
                            terms = ppo_token_loss(logp, base, adv, loss)
                        tok_loss = terms.loss
                    else:
                        tok_loss = -logp
                    # Token-mean over the mini-batch's model tokens on all ranks; FSDP averages the
                    # ranks' gradients, hence the factor world.
                    (tok_loss.sum() * (m.weight * ctx.world / denom)).backward()
                    if m.weight:
                        acc["loss"] += tok_loss.detach().sum().to(f64)
                        acc["tokens"] += tok_loss.numel()
                        acc["entropy"] += ent.sum().to(f64)
                        if grpo:
                            acc["clipped"] += terms.clipped.sum().to(f64)
                            acc["dual"] += terms.dual_clipped.sum().to(f64)
                            acc["kl"] += terms.kl.sum().to(f64)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), opt.grad_clip)
                if hasattr(norm, "full_tensor"):
                    norm = norm.full_tensor()
                norm = float(norm)
                grad_norms.append(norm)
                if math.isfinite(norm):
                    self.optim.step()
                else:
                    skipped += 1
                self.optim.zero_grad(set_to_none=True)
                first = False

        import torch.distributed as dist

        for v in acc.values():
            ctx.all_reduce(v)
        if ctx.is_dist:
            ctx.all_reduce(d_max, dist.ReduceOp.MAX)
            ctx.all_reduce(r_max, dist.ReduceOp.MAX)
            ctx.all_reduce(r_min, dist.ReduceOp.MIN)
        tok = max(1.0, float(acc["tokens"]))
        dtok = float(acc["d_tokens"])
        out = {
            "mode": mode,
            "loss": float(acc["loss"]) / tok,
            "clipFraction": float(acc["clipped"]) / tok if grpo else None,
            "dualClipFraction": float(acc["dual"]) / tok if grpo else None,
            "approxKl": float(acc["kl"]) / tok if grpo else None,
            "entropy": float(acc["entropy"]) / tok,
            "gradNorm": float(np.mean(grad_norms)) if grad_norms else 0.0,
            "gradNorms": grad_norms,
            "updates": updates,
            "skippedUpdates": skipped,
            "lr": lr,
            "tokens": batch.num_tokens,
            "sequences": n,
            "logprobDrift": None,
            "tis": None,
            "trainSeconds": time.perf_counter() - t0,
        }
        if grpo:
            out["logprobDrift"] = {
                "tokens": int(dtok),
                "meanAbs": float(acc["d_abs"]) / max(1.0, dtok),
                "maxAbs": float(d_max),
                "mismatchKl": float(acc["d_kl"]) / max(1.0, dtok),
                "ratioMin": float(r_min) if dtok else 1.0,
                "ratioMax": float(r_max) if dtok else 1.0,
            }
            if loss.decoupled:
                out["tis"] = {"cap": loss.tis_cap, "meanWeight": float(acc["tis_w"]) / tok, "cappedFraction": float(acc["tis_cap"]) / tok}
        return out

    @staticmethod
    def _store_rows(store: dict, m: Micro, logp: torch.Tensor) -> None:
        parts = torch.split(logp.detach(), m.counts)
        for i, p in zip(m.idx, parts):
            store[i] = p

    @staticmethod
    def _rows(store: dict, m: Micro, like: torch.Tensor) -> torch.Tensor:
        if m.weight == 0:
            return torch.zeros_like(like.detach())
        return torch.cat([store[i] for i in m.idx])

    # ----------------------------------------------------------------- save

    @torch.no_grad()
    def _gathered_weights(self) -> dict[str, torch.Tensor]:
        """The model's state dict on rank 0's CPU in the checkpoint dtype (empty on other ranks). Sharded
        parameters are gathered one at a time and converted at once, so no rank holds the whole model in
        fp32 (rank 0 holds it in the checkpoint dtype, as the file will). Collective."""
        from torch.distributed.tensor import DTensor

        out: dict[str, torch.Tensor] = {}
        for name, t in self.model.state_dict().items():
            full = t.full_tensor() if isinstance(t, DTensor) else t
            if self.ctx.is_main:
                out[name] = full.detach().to("cpu", self.save_dtype)
            del full
        return out


    def save(self, out_dir: str, optimizer_file: str | None, meta: dict) -> str:
        """Write the checkpoint: the optimizer state (sharded, resumable with any world size), then HF
        weights (``save_pretrained``; a tied ``lm_head`` is left out and tied again on load), the base
        model's tokenizer files, then ``manifest.json`` and ``STABLE``. Written to ``out_dir + '.tmp'``
        and renamed into place. Collective; returns the manifest hash (rank 0; '' elsewhere)."""
        sd = self._gathered_weights()
        # Every rank writes its own shard of the AdamW state (never gathered on one rank); with sharded
        # checkpoints (:mod:`.checkpoints`) the caller writes it only at checkpoint steps (None here).
        if optimizer_file is not None:
            save_optimizer(self.model, self.optim, optimizer_file, self.ctx)
        if not self.ctx.is_main:
            return ""
        # What a replay after a restart must reproduce bit for bit (:func:`.checkpoints.weights_digest`).
        self.last_weights_digest = weights_digest(sd)
        tmp = out_dir.rstrip("/") + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        if getattr(self.model.config, "tie_word_embeddings", False) and "lm_head.weight" in sd and "model.embed_tokens.weight" in sd:
            # A gathered (FSDP) state dict holds the tied matrix twice as separate copies; keep the file
            # identical to a single process's: the embedding only, tied again on load.
            if not torch.equal(sd["lm_head.weight"], sd["model.embed_tokens.weight"]):
                raise RuntimeError("tied lm_head and embed_tokens diverged during training; the model's weight tying was broken")
            del sd["lm_head.weight"]
        unwrapped = self.model
        unwrapped.save_pretrained(tmp, state_dict=sd)
        copy_tokenizer_files(self.base_dir, tmp)
        digest = write_manifest(tmp, meta)
        mark_stable(tmp)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
        return digest
