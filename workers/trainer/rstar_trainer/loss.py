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


def tis_weight(recomputed: torch.Tensor, engine: torch.Tensor, cap: float | None) -> torch.Tensor:
    """Behaviour importance weight ``min(exp(clamp(recomputed - engine, +-20)), cap)`` per token (no gradient;
    no cap when ``cap`` is None). Same rule as libs/grpo ``behaviourWeight``: ``recomputed`` are the proximal
    logprobs (the trainer's, before this step's update), ``engine`` the behaviour logprobs the engine recorded."""
    w = torch.exp(torch.clamp(recomputed - engine, -20.0, 20.0))
    return (w if cap is None else torch.clamp(w, max=cap)).detach()


def decoupled_token_loss(logp_new: torch.Tensor, logp_prox: torch.Tensor, logp_behav: torch.Tensor, advantage: torch.Tensor,
                         cfg: LossConfig) -> tuple[TokenTerms, torch.Tensor]:
    """Decoupled PPO (Hilton, Cobbe & Schulman 2022, arXiv 2110.00641; AReaL, Fu et al. 2025, arXiv 2505.24298):
    ``loss = w * ppo_token_loss(logp_new, logp_prox, A)`` with the detached behaviour weight
    ``w = min(pi_prox / pi_behav, cfg.tis_cap)`` (:func:`tis_weight`). The trust region is centred on the proximal
    policy; ``w`` corrects for tokens sampled by an older (or partly older) policy version. With
    ``logp_prox == logp_behav`` the weight is exactly 1 and the loss is today's :func:`ppo_token_loss` against
    the behaviour logprobs. Same rules as libs/grpo ``decoupledTokenLoss``; returns the terms (loss weighted)
    and the weights. All inputs 1-D over model tokens."""
    t = ppo_token_loss(logp_new, logp_prox, advantage, cfg)
    w = tis_weight(logp_prox, logp_behav, cfg.tis_cap)
    return TokenTerms(loss=t.loss * w, ratio=t.ratio, clipped=t.clipped, dual_clipped=t.dual_clipped, kl=t.kl), w


def loss_stats(logp_new: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor, advantage: torch.Tensor, cfg: LossConfig,
               logp_prox: torch.Tensor | None = None) -> dict:
    """Token-mean loss and its metrics over a whole batch, for cross-checks with libs/grpo's
    ``clippedLossStats`` (tensors of shape [N, L], ``advantage`` [N] broadcast; float64 recommended).
    Returns loss, clipFraction, dualClipFraction, approxKl, tokens. With ``logp_prox`` the loss is decoupled
    PPO (``logp_old`` = behaviour logprobs, cap ``cfg.tis_cap``) as libs/grpo's ``decoupledLossStats``, and
    meanWeight / cappedFraction are added."""
    sel = mask.bool()
    adv = advantage[:, None].expand_as(logp_new)
    n = max(1, int(sel.sum()))
    extra = {}
    if logp_prox is None:
        t = ppo_token_loss(logp_new[sel], logp_old[sel], adv[sel], cfg)
    else:
        t, w = decoupled_token_loss(logp_new[sel], logp_prox[sel], logp_old[sel], adv[sel], cfg)
        capped = float((w >= cfg.tis_cap).sum()) / n if cfg.tis_cap is not None else 0.0
        extra = {"meanWeight": float(w.sum() / n), "cappedFraction": capped}
    return {
        "loss": float(t.loss.sum() / n),
        "clipFraction": float(t.clipped.sum()) / n,
        "dualClipFraction": float(t.dual_clipped.sum()) / n,
        "approxKl": float(t.kl.sum() / n),
        "tokens": int(sel.sum()),
        **extra,
    }
