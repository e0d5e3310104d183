"""The PPO-clip loss of docs/design/protocol.md §6 against a hand-computed example, its gradients, and SFT."""

import math

import torch

from rstar_trainer.config import LossConfig
from rstar_trainer.loss import loss_stats, ppo_token_loss, tis_weight

CFG = LossConfig()


def test_hand_computed_tokens():
    # (rho, A): expected loss, clipped?, dual?
    #  rho 1.5, A  1: -min(1.5, 1.28)      = -1.28, clipped
    #  rho 5,   A -1: max(5, 1.28) = 5 -> dual bound 3*1 = 3, dual
    #  rho 0.5, A -1: max(0.5, 0.8)        = 0.8, clipped, bound 3 not binding
    #  rho 0.5, A  1: max(-0.5, -0.8)      = -0.5, not clipped
    #  rho 1.1, A  2: inside the range     = -2.2
    rho = torch.tensor([1.5, 5.0, 0.5, 0.5, 1.1], dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0, 2.0], dtype=torch.float64)
    old = torch.full_like(rho, -2.0)
    new = (old + torch.log(rho)).requires_grad_(True)
    t = ppo_token_loss(new, old, adv, CFG)
    expected = [-1.28, 3.0, 0.8, -0.5, -2.2]
    assert torch.allclose(t.loss, torch.tensor(expected, dtype=torch.float64), atol=1e-12)
    assert t.clipped.tolist() == [True, False, True, False, False]  # rho 5, A -1: the unclipped term binds
    assert t.dual_clipped.tolist() == [False, True, False, False, False]
    # k3 KL per token: rho - 1 - log rho
    assert torch.allclose(t.kl, rho - 1 - torch.log(rho), atol=1e-12)
    # Token-mean of the five.
    m = loss_stats(new.detach()[None], old[None], torch.ones(1, 5), torch.ones(1, dtype=torch.float64), CFG)
    assert m["tokens"] == 5
    t.loss.sum().backward()
    # Gradient flows only where the unclipped term binds: d(-rho*A)/dlogp = -rho*A.
    g = new.grad
    assert g[0] == 0 and g[1] == 0 and g[2] == 0
    assert math.isclose(float(g[3]), -0.5, abs_tol=1e-12)
    assert math.isclose(float(g[4]), -2.2, abs_tol=1e-12)


def test_token_mean_over_the_batch_not_per_sequence():
    # Two sequences with 1 and 3 model tokens: the mean is over 4 tokens.
    new = torch.tensor([[0.0, -1.0, 0.0, 0.0], [0.0, -1.0, -1.0, -1.0]], dtype=torch.float64)
    old = torch.tensor([[0.0, -1.0, 0.0, 0.0], [0.0, -1.0, -1.0, -1.0]], dtype=torch.float64)
    mask = torch.tensor([[0, 1, 0, 0], [0, 1, 1, 1]])
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    s = loss_stats(new, old, mask, adv, CFG)
    assert s["tokens"] == 4
    assert math.isclose(s["loss"], (-1 + 3 * 1) / 4, abs_tol=1e-12)
    assert s["clipFraction"] == 0 and s["approxKl"] == 0


def test_log_ratio_clamp_and_tis_weight():
    new = torch.tensor([0.0], dtype=torch.float64)
    old = torch.tensor([-50.0], dtype=torch.float64)
    t = ppo_token_loss(new, old, torch.tensor([1.0], dtype=torch.float64), CFG)
    assert math.isclose(float(t.ratio), math.exp(20), rel_tol=1e-12)
    w = tis_weight(torch.tensor([0.0, -1.0]), torch.tensor([-1.0, 0.0]), cap=2.0)
    assert torch.allclose(w, torch.tensor([2.0, math.exp(-1)]))


def test_loss_config_refuses_kl_and_other_aggregations():
    import pytest

    from rstar_trainer.errors import RequestError

    with pytest.raises(RequestError, match="loss.kl"):
        LossConfig.parse({"kl": 0.001})
    with pytest.raises(RequestError, match="token-mean"):
        LossConfig.parse({"aggregation": "seq-mean"})
    assert LossConfig.parse({"tisCap": 2}).old_logprobs == "recomputed"
    assert LossConfig.parse({"tisCap": 2}).decoupled
    d = LossConfig.parse({"decoupled": True})
    assert d.decoupled and d.old_logprobs == "recomputed" and d.tis_cap is None
    with pytest.raises(RequestError, match="loss.decoupled"):
        LossConfig.parse({"decoupled": "yes"})
