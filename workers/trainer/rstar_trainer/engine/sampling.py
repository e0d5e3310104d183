"""Seeded per-request sampling: temperature, top-p, top-k; the logprob of each sampled token.

Every request owns a ``torch.Generator`` seeded from its ``sampling_seed`` and draws exactly one
uniform number per generated token, so its tokens do not depend on which other requests share the
batch, nor on a retraction and recompute in between.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch

from ..errors import RequestError


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_new_tokens: int = 128
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    seed: int | None = None
    skip_special_tokens: bool = True
    no_stop_trim: bool = False


def _num(v, name: str, default, ok, hint: str):
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not ok(v):
        raise RequestError(f"{name} must be {hint}, got {v!r}", name)
    return v


def _strs(v, name: str) -> list[str]:
    if v is None:
        return []
    v = [v] if isinstance(v, str) else v
    if not isinstance(v, list) or not all(isinstance(s, str) and s for s in v):
        raise RequestError(f"{name} must be a non-empty string or a list of them", name)
    return v


def _ids(v, name: str) -> list[int]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
        raise RequestError(f"{name} must be a list of token ids", name)
    return v


def parse_sampling(sp: dict, prefix: str, *, max_new_key: str = "max_new_tokens", seed_keys=("sampling_seed", "seed"), default_max_new: int = 128) -> SamplingParams:
    """Validate sampling parameters (SGLang's names under ``sampling_params``, vLLM's at the top level)."""
    if not isinstance(sp, dict):
        raise RequestError(f"{prefix or 'sampling_params'} must be an object", prefix or "sampling_params")
    p = lambda k: f"{prefix}.{k}" if prefix else k  # noqa: E731
    seed = None
    for k in seed_keys:
        if sp.get(k) is not None:
            seed = int(_num(sp.get(k), p(k), 0, lambda x: int(x) == x, "an integer"))
            break
    return SamplingParams(
        temperature=float(_num(sp.get("temperature"), p("temperature"), 1.0, lambda x: x >= 0, "a number >= 0")),
        top_p=float(_num(sp.get("top_p"), p("top_p"), 1.0, lambda x: 0 < x <= 1, "in (0, 1]")),
        top_k=int(_num(sp.get("top_k"), p("top_k"), -1, lambda x: int(x) == x and (x == -1 or x >= 1), "-1 or a positive integer")),
        max_new_tokens=int(_num(sp.get(max_new_key), p(max_new_key), default_max_new, lambda x: int(x) == x and x >= 0, "a non-negative integer")),
        stop=_strs(sp.get("stop"), p("stop")),
        stop_token_ids=_ids(sp.get("stop_token_ids"), p("stop_token_ids")),
        ignore_eos=bool(sp.get("ignore_eos", False)),
        seed=seed,
        skip_special_tokens=sp.get("skip_special_tokens", True) is not False,
        no_stop_trim=bool(sp.get("no_stop_trim", False)),
    )


def make_generator(seed: int | None) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed if seed is not None else int.from_bytes(os.urandom(8), "little") >> 1)
    return g


def sample_token(logits: torch.Tensor, sp: SamplingParams, gen: torch.Generator, original_logprob: bool) -> tuple[int, float]:
    """Draw one token from fp32 ``logits`` [V]. Temperature 0 = greedy. The reported logprob is of the
    temperature-scaled distribution before top-p/top-k truncation (SGLang's default), or of the raw
    logits when ``original_logprob``. One uniform draw per call, always."""
    u = float(torch.rand((), generator=gen))
    if sp.temperature == 0:
        tok = int(torch.argmax(logits))
        return tok, float(torch.log_softmax(logits, -1)[tok])
    scaled = logits / sp.temperature
    logp = torch.log_softmax(scaled.double(), -1)
    probs = logp.exp()
    if sp.top_k > 0 or sp.top_p < 1.0:
        sp_probs, order = torch.sort(probs, descending=True)
        keep = torch.ones_like(sp_probs, dtype=torch.bool)
        if sp.top_k > 0:
            keep[sp.top_k :] = False
        if sp.top_p < 1.0:
            csum = torch.cumsum(sp_probs, 0)
            keep &= (csum - sp_probs) < sp.top_p
        kept = sp_probs * keep
        csum = torch.cumsum(kept, 0)
        i = int(torch.searchsorted(csum, torch.tensor(u * float(csum[-1]), dtype=csum.dtype), right=True).clamp(max=int(keep.sum()) - 1))
        tok = int(order[i])
    else:
        csum = torch.cumsum(probs, 0)
        tok = int(torch.searchsorted(csum, torch.tensor(u * float(csum[-1]), dtype=csum.dtype), right=True).clamp(max=probs.numel() - 1))
        # Never pick a zero-probability token through rounding at the top end.
        while float(probs[tok]) == 0.0 and tok > 0:
            tok -= 1
    if original_logprob:
        return tok, float(torch.log_softmax(logits, -1)[tok])
    return tok, float(logp[tok])
