"""The committed shared vectors (libs/grpo/fixtures/shared-vectors.json): the worker's loss, clip
fraction, dual-clip fraction and approx KL equal libs/grpo's to 1e-6, on-policy and under decoupled PPO
(behaviour, proximal and current logprobs); its v1 hash and v2 file bytes equal the TypeScript ones."""

import torch

from rstar_trainer.batch import canonical_hash_v1, read_batch_bytes, write_v2
from rstar_trainer.config import LossConfig
from rstar_trainer.loss import loss_stats

from conftest import sha256


def _padded(rows):
    L = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (L - len(r)) for r in rows], dtype=torch.float64)


def test_loss_metrics_equal_libs_grpo(fixture_vectors):
    fx = fixture_vectors
    seqs = fx["sequences"]
    cfg = LossConfig.parse({"epsLow": fx["clip"]["epsLow"], "epsHigh": fx["clip"]["epsHigh"], "dualClip": fx["clip"]["dualClip"]})
    s = loss_stats(
        _padded(fx["logpNew"]), _padded([q["oldLogprobs"] for q in seqs]), _padded([q["lossMask"] for q in seqs]),
        torch.tensor([q["advantage"] for q in seqs], dtype=torch.float64), cfg,
    )
    exp = fx["expected"]
    assert s["tokens"] == exp["tokens"]
    for k in ("loss", "clipFraction", "dualClipFraction", "approxKl"):
        assert abs(s[k] - exp[k]) < 1e-6, (k, s[k], exp[k])
    assert 0 < s["clipFraction"] < 1 and s["dualClipFraction"] > 0


def _cfg(fx, **extra):
    return LossConfig.parse({"epsLow": fx["clip"]["epsLow"], "epsHigh": fx["clip"]["epsHigh"], "dualClip": fx["clip"]["dualClip"], **extra})


def test_decoupled_loss_equals_libs_grpo(fixture_vectors):
    fx = fixture_vectors
    seqs = fx["sequences"]
    d = fx["decoupled"]
    cfg = _cfg(fx, decoupled=True, tisCap=d["cap"])
    s = loss_stats(
        _padded(d["logpNew"]), _padded([q["oldLogprobs"] for q in seqs]), _padded([q["lossMask"] for q in seqs]),
        torch.tensor([q["advantage"] for q in seqs], dtype=torch.float64), cfg, logp_prox=_padded(d["logpProx"]),
    )
    exp = d["expected"]
    assert s["tokens"] == exp["tokens"]
    for k in ("loss", "clipFraction", "dualClipFraction", "approxKl", "meanWeight", "cappedFraction"):
        assert abs(s[k] - exp[k]) < 1e-6, (k, s[k], exp[k])
    assert 0 < s["cappedFraction"] < 1


def test_decoupled_with_proximal_equal_behaviour_is_the_on_policy_loss(fixture_vectors):
    fx = fixture_vectors
    seqs = fx["sequences"]
    old = _padded([q["oldLogprobs"] for q in seqs])
    args = (_padded(fx["logpNew"]), old, _padded([q["lossMask"] for q in seqs]), torch.tensor([q["advantage"] for q in seqs], dtype=torch.float64))
    on = loss_stats(*args, _cfg(fx))
    dec = loss_stats(*args, _cfg(fx, decoupled=True, tisCap=2.0), logp_prox=old.clone())
    assert dec.pop("meanWeight") == 1.0 and dec.pop("cappedFraction") == 0.0
    assert dec == on
    assert abs(on["loss"] - fx["expected"]["loss"]) < 1e-6


def test_v1_hash_and_v2_bytes_equal_typescript(fixture_vectors):
    fx = fixture_vectors
    seqs = fx["sequences"]
    assert canonical_hash_v1(seqs) == fx["expected"]["batchHash"]
    h = fx["header"]
    data = write_v2(seqs, run_id=h["runId"], step=h["step"], policy_version=h["policyVersion"], source_batch_hash=fx["expected"]["batchHash"])
    assert len(data) == fx["expected"]["v2Bytes"]
    assert sha256(data) == fx["expected"]["v2Sha256"]
    b = read_batch_bytes(data, "fixture")
    assert b.batch_hash == fx["expected"]["v2Sha256"]
    assert b.num_tokens == fx["expected"]["tokens"]
    assert b.rollout_ids == [q["rolloutId"] for q in seqs]
    assert (b.run_id, b.step, b.policy_version) == (h["runId"], h["step"], h["policyVersion"])
