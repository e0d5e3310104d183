"""The ``loss`` and ``optimizer`` objects of a step request, validated with field-named errors."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .errors import RequestError


def _num(obj: dict, key: str, default, field: str, *, lo=None, hi=None, integer=False, allow_none=False, lo_open=False):
    v = obj.get(key, default)
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise RequestError(f"{field}.{key} must be a finite number, got {v!r}", f"{field}.{key}")
    if integer and int(v) != v:
        raise RequestError(f"{field}.{key} must be an integer, got {v!r}", f"{field}.{key}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise RequestError(f"{field}.{key} must be {'>' if lo_open else '>='} {lo}, got {v!r}", f"{field}.{key}")
    if hi is not None and v > hi:
        raise RequestError(f"{field}.{key} must be <= {hi}, got {v!r}", f"{field}.{key}")
    return int(v) if integer else float(v)


@dataclass(frozen=True)
class LossConfig:
    """docs/design/protocol.md §6 PPO-clip (clip-higher, dual clip, token-mean, no KL) or SFT cross-entropy.

    - ``eps_low`` / ``eps_high``: ratio clipped to [1 - eps_low, 1 + eps_high] (0.2 / 0.28).
    - ``dual_clip``: c; for A < 0 the token loss is at most -c*A (3).
    - ``log_ratio_clamp``: log rho clamped to +-20 before exp.
    - ``old_logprobs``: ``engine`` (rho against the sampling engine's logprobs, as the v1 protocol says)
      or ``recomputed`` (against the trainer's own logprobs computed before the update, as verl does).
    - ``tis_cap``: truncated importance sampling; when set, each token's loss is weighted by
      ``min(exp(recomputed - engine), tis_cap)`` (detached) and rho is taken against the recomputed
      logprobs, which corrects for the engine/trainer mismatch (Yao et al. 2025, "Your efficient RL
      framework secretly brings you off-policy RL training").
    - ``decoupled``: decoupled PPO for asynchronous (stale or partial) rollouts (AReaL; Hilton et al. 2022):
      rho against the recomputed proximal logprobs and each token weighted by ``min(pi_prox / pi_engine,
      tis_cap)`` (no cap when ``tis_cap`` is None). Setting ``tis_cap`` implies it: TIS against the recomputed
      logprobs is the same loss with a cap (:func:`.loss.decoupled_token_loss`).
    - ``temperature``: the sampling temperature; logits are divided by it before log-softmax, as the engine did.
    """

    eps_low: float = 0.2
    eps_high: float = 0.28
    dual_clip: float = 3.0
    log_ratio_clamp: float = 20.0
    old_logprobs: str = "engine"
    tis_cap: float | None = None
    temperature: float = 1.0
    decoupled: bool = False

    @staticmethod
    def parse(obj) -> "LossConfig":
        if obj is None:
            obj = {}
        if not isinstance(obj, dict):
            raise RequestError("loss must be an object", "loss")
        agg = obj.get("aggregation", "token-mean")
        if agg != "token-mean":
            raise RequestError(f"loss.aggregation {agg!r} is not supported; docs/design/protocol.md §6 uses 'token-mean'", "loss.aggregation")
        for k in ("kl", "entropyBonus"):
            if obj.get(k, 0) not in (0, 0.0, None):
                raise RequestError(f"loss.{k} must be 0: GRPO-RoC has no KL term and no entropy bonus (docs/design/protocol.md §6)", f"loss.{k}")
        src = obj.get("oldLogprobs", "engine")
        if src not in ("engine", "recomputed"):
            raise RequestError(f"loss.oldLogprobs must be 'engine' or 'recomputed', got {src!r}", "loss.oldLogprobs")
        tis = _num(obj, "tisCap", None, "loss", lo=1.0, allow_none=True)
        dual = _num(obj, "dualClip", 3.0, "loss", lo=1.0, lo_open=True)
        dec = obj.get("decoupled", False)
        if not isinstance(dec, bool):
            raise RequestError(f"loss.decoupled must be true or false, got {dec!r}", "loss.decoupled")
        decoupled = dec or tis is not None
        return LossConfig(
            eps_low=_num(obj, "epsLow", 0.2, "loss", lo=0.0, hi=1.0),
            eps_high=_num(obj, "epsHigh", 0.28, "loss", lo=0.0),
            dual_clip=dual,
            log_ratio_clamp=_num(obj, "logRatioClamp", 20.0, "loss", lo=0.0, lo_open=True),
            old_logprobs="recomputed" if decoupled else src,
            tis_cap=tis,
            temperature=_num(obj, "temperature", 1.0, "loss", lo=0.0, lo_open=True),
            decoupled=decoupled,
        )

    def to_json(self) -> dict:
        return {
            "epsLow": self.eps_low, "epsHigh": self.eps_high, "dualClip": self.dual_clip,
            "logRatioClamp": self.log_ratio_clamp, "aggregation": "token-mean", "kl": 0, "entropyBonus": 0,
            "oldLogprobs": self.old_logprobs, "tisCap": self.tis_cap, "temperature": self.temperature,
            "decoupled": self.decoupled,
        }


@dataclass(frozen=True)
class OptimizerConfig:
    """AdamW with linear warm-up and gradient clipping; how a step's batch is cut.

    - ``lr`` peak learning rate; ``warmup_steps``: the lr ramps linearly ``lr * min(1, (k+1)/warmup)``
      over the first trained steps ``k = 0, 1, ...`` of the run (counted in RL steps, as verl does).
    - ``mini_batch``: sequences per optimizer update (verl's ``ppo_mini_batch_size``); ``None`` = the whole
      batch, one update per step. ``ppo_epochs`` passes over the batch.
    - ``micro_batch``: sequences per forward/backward (gradient accumulation inside a mini-batch);
      ``micro_batch_tokens`` additionally caps padded tokens (sequences x longest) per micro-batch.
    """

    lr: float = 1e-6
    warmup_steps: int = 0
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    micro_batch: int = 8
    micro_batch_tokens: int | None = None
    mini_batch: int | None = None
    ppo_epochs: int = 1
    gradient_checkpointing: bool = False

    @staticmethod
    def parse(obj) -> "OptimizerConfig":
        if obj is None:
            obj = {}
        if not isinstance(obj, dict):
            raise RequestError("optimizer must be an object", "optimizer")
        kind = obj.get("kind", "adamw")
        if kind != "adamw":
            raise RequestError(f"optimizer.kind {kind!r} is not supported; use 'adamw'", "optimizer.kind")
        betas = obj.get("betas", [0.9, 0.999])
        if not (isinstance(betas, list) and len(betas) == 2 and all(isinstance(b, (int, float)) and 0 <= b < 1 for b in betas)):
            raise RequestError("optimizer.betas must be two numbers in [0, 1)", "optimizer.betas")
        gc = obj.get("gradientCheckpointing", False)
        if not isinstance(gc, bool):
            raise RequestError("optimizer.gradientCheckpointing must be true or false", "optimizer.gradientCheckpointing")
        return OptimizerConfig(
            lr=_num(obj, "lr", 1e-6, "optimizer", lo=0.0, lo_open=True),
            warmup_steps=_num(obj, "warmupSteps", 0, "optimizer", lo=0, integer=True),
            weight_decay=_num(obj, "weightDecay", 0.01, "optimizer", lo=0.0),
            grad_clip=_num(obj, "gradClip", 1.0, "optimizer", lo=0.0, lo_open=True),
            betas=(float(betas[0]), float(betas[1])),
            eps=_num(obj, "eps", 1e-8, "optimizer", lo=0.0, lo_open=True),
            micro_batch=_num(obj, "microBatch", 8, "optimizer", lo=1, integer=True),
            micro_batch_tokens=_num(obj, "microBatchTokens", None, "optimizer", lo=1, integer=True, allow_none=True),
            mini_batch=_num(obj, "miniBatch", None, "optimizer", lo=1, integer=True, allow_none=True),
            ppo_epochs=_num(obj, "ppoEpochs", 1, "optimizer", lo=1, integer=True),
            gradient_checkpointing=gc,
        )

    def lr_at(self, trained_steps: int) -> float:
        """Learning rate for the run's ``trained_steps``-th step (0-based): linear warm-up, then constant."""
        if self.warmup_steps <= 0:
            return self.lr
        return self.lr * min(1.0, (trained_steps + 1) / self.warmup_steps)

    def to_json(self) -> dict:
        d = asdict(self)
        return {
            "kind": "adamw", "lr": d["lr"], "warmupSteps": d["warmup_steps"], "weightDecay": d["weight_decay"],
            "gradClip": d["grad_clip"], "betas": list(d["betas"]), "eps": d["eps"], "microBatch": d["micro_batch"],
            "microBatchTokens": d["micro_batch_tokens"], "miniBatch": d["mini_batch"], "ppoEpochs": d["ppo_epochs"],
            "gradientCheckpointing": d["gradient_checkpointing"],
        }
