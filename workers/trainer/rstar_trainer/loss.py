"""Token-level losses: GRPO-RoC's PPO-clip (docs/design/protocol.md §6) and SFT cross-entropy, on tensors.

Same rules as libs/grpo ``clippedTokenLoss`` (TypeScript), checked against it on shared test vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import LossConfig


@dataclass
class TokenTerms:
    """Per-token results over the selected model tokens (1-D tensors of equal length)."""

    loss: torch.Tensor
    ratio: torch.Tensor
    clipped: torch.Tensor
    dual_clipped: torch.Tensor
    kl: torch.Tensor


def ppo_token_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, advantage: torch.Tensor, cfg: LossConfig) -> TokenTerms:
    """PPO-clip with clip-higher and dual clip (rStar2-Agent eq. 2; Ye et al. 2020 for the dual clip).

    For each model token: ``rho = exp(clamp(logp_new - logp_old, +-clamp))``,
    ``loss = max(-rho*A, -clip(rho, 1-eps_low, 1+eps_high)*A)``, and for ``A < 0`` additionally
    ``loss = min(loss, -c*A)``. ``clipped`` marks tokens whose clipped term was binding (verl's
    ``pg_clipfrac``), ``dual_clipped`` those bounded by ``-c*A``; ``kl`` is the k3 estimate
    ``(rho - 1) - log rho`` (Schulman 2020). All inputs are 1-D over model tokens; natural logs.
    """
    log_ratio = torch.clamp(logp_new - logp_old, -cfg.log_ratio_clamp, cfg.log_ratio_clamp)
    ratio = torch.exp(log_ratio)
    unclipped = -ratio * advantage
    clipped_loss = -torch.clamp(ratio, 1 - cfg.eps_low, 1 + cfg.eps_high) * advantage
    ppo = torch.maximum(unclipped, clipped_loss)
    bound = -cfg.dual_clip * advantage
    dual = (advantage < 0) & (bound < ppo)
    loss = torch.where(dual, bound, ppo)
    with torch.no_grad():
        clipped = clipped_loss > unclipped
        r = ratio.detach()
        kl = (r - 1) - torch.log(r)
    return TokenTerms(loss=loss, ratio=r, clipped=clipped, dual_clipped=dual.detach(), kl=kl)


def tis_weight(recomputed: torch.Tensor, engine: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance-sampling weight ``min(exp(recomputed - engine), cap)`` per token (no gradient)."""
    return torch.clamp(torch.exp(torch.clamp(recomputed - engine, max=20.0)), max=cap).detach()


def loss_stats(logp_new: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor, advantage: torch.Tensor, cfg: LossConfig) -> dict:
    """Token-mean loss and its metrics over a whole batch, for cross-checks with libs/grpo's
    ``clippedLossStats`` (tensors of shape [N, L], ``advantage`` [N] broadcast; float64 recommended).
    Returns loss, clipFraction, dualClipFraction, approxKl, tokens."""
    sel = mask.bool()
    adv = advantage[:, None].expand_as(logp_new)
    t = ppo_token_loss(logp_new[sel], logp_old[sel], adv[sel], cfg)
    n = max(1, int(sel.sum()))
    return {
        "loss": float(t.loss.sum() / n),
        "clipFraction": float(t.clipped.sum()) / n,
        "dualClipFraction": float(t.dual_clipped.sum()) / n,
        "approxKl": float(t.kl.sum() / n),
        "tokens": int(sel.sum()),
    }
