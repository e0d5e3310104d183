"""Packed micro-batches: the same loss and gradients as padded ones, no attention across sequences,
token-balanced ranks, chunked logprobs."""

import numpy as np
import pytest
import torch

from rstar_trainer.batch import read_batch_bytes, write_v2
from rstar_trainer.config import LossConfig
from rstar_trainer.distributed import DistContext
from rstar_trainer.loss import ppo_token_loss
from rstar_trainer.packing import balance_ranks, pack_sequences, pad_sequences, plan_micro_batches, split_to_count
from rstar_trainer.policy import PolicyTrainer

from conftest import random_sequences


def _skewed_lengths(n: int, seed: int) -> dict[int, int]:
    # Rollout lengths are heavy-tailed: most answers are short, a few run to the response budget.
    rng = np.random.default_rng(seed)
    return {i: int(min(16384, 200 + rng.lognormal(6.5, 1.1))) for i in range(n)}


@pytest.mark.parametrize("world", [2, 4, 8])
def test_token_balanced_ranks_within_10_percent_of_the_mean(world):
    lengths = _skewed_lengths(256, seed=world)
    assert max(lengths.values()) > 8 * float(np.median(list(lengths.values())))  # the batch really is skewed
    shares = balance_ranks(lengths, world)
    assert sorted(i for s in shares for i in s) == sorted(lengths)
    loads = [sum(lengths[i] for i in s) for s in shares]
    mean = sum(loads) / world
    assert all(abs(x - mean) <= 0.1 * mean for x in loads), loads
    # The micro-batch plan keeps that split, gives every rank the same number of passes and no filler.
    plan = plan_micro_batches(lengths, world, max_seqs=8, max_tokens=16384)
    assert len({len(p) for p in plan}) == 1
    assert all(pack is not None for p in plan for pack in p)
    for r, p in enumerate(plan):
        assert sum(lengths[i] for pack in p for i in pack) == loads[r]
        for pack in p:
            assert len(pack) <= 8 and (len(pack) == 1 or sum(lengths[i] for i in pack) <= 16384)


def test_fillers_only_where_a_rank_has_too_few_sequences():
    lengths = {0: 900, 1: 100, 2: 120}
    plan = plan_micro_batches(lengths, 4, max_seqs=1, max_tokens=None)
    # 3 sequences on 4 ranks: one pass each, the fourth rank runs one filler.
    assert [len(p) for p in plan] == [1, 1, 1, 1]
    assert sum(pack is None for p in plan for pack in p) == 1
    # A rank that cannot split its work (one 900-token sequence) runs a filler while the other runs two packs.
    lengths = {0: 900, 1: 450, 2: 450}
    plan = plan_micro_batches(lengths, 2, max_seqs=8, max_tokens=800)
    assert plan == [[[0], None], [[1], [2]]]
    # A rank with enough sequences splits its packs instead of idling: 4 sequences in 1 pack -> 3 packs.
    lengths = {i: 100 * (i + 1) for i in range(4)}
    packs = split_to_count([[0, 1, 2, 3]], lengths, 3)
    assert len(packs) == 3 and sorted(i for p in packs for i in p) == [0, 1, 2, 3] and all(packs)
    assert split_to_count([[0]], lengths, 3) == [[0]]  # one sequence cannot be split


def _batch(seqs):
    return read_batch_bytes(write_v2(seqs, run_id="p", step=0, policy_version=0), "mem")


def _trainer(tiny_model) -> PolicyTrainer:
    torch.manual_seed(0)
    t = PolicyTrainer(tiny_model, DistContext(), torch.float32)
    t.load(tiny_model)
    return t


def _grads(model) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def test_packed_equals_padded_loss_and_gradients(tiny_model):
    seqs = random_sequences(2, 7, 20, 500, seed=11) + random_sequences(2, 12, 41, 500, seed=12) + random_sequences(1, 30, 5, 500, seed=13)
    batch = _batch(seqs)
    trainer = _trainer(tiny_model)
    trainer.logprob_chunk_bytes = 4 * trainer.vocab_size * 16  # 16 rows per chunk: several chunks per pack
    model, cfg = trainer.model, LossConfig(temperature=0.7)
    n = batch.num_sequences
    tokens = batch.num_tokens

    # Packed: every sequence in one row, the worker's own code path.
    arrays = pack_sequences(batch.token_ids, batch.loss_mask, batch.old_logprobs, batch.seq_offsets, batch.advantages, list(range(n)))
    m = trainer._micro(arrays)
    model.zero_grad(set_to_none=True)
    logp, ent = trainer._logprobs(m, cfg.temperature, entropy=True)
    packed = ppo_token_loss(logp, m.old, m.adv, cfg).loss.sum() / tokens
    packed.backward()
    g_packed = _grads(model)

    # Padded: a [B, L] batch with an attention mask and full-vocabulary logits, written out here.
    ids, attn, mask, old = pad_sequences(batch)
    L = ids.shape[1]
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1].float() / cfg.temperature
    lsm = torch.log_softmax(logits, -1)
    sel = mask[:, 1:].bool()
    ref_logp = lsm.gather(-1, ids[:, 1:, None]).squeeze(-1)[sel]
    ref_ent = (-(lsm.exp() * lsm).sum(-1))[sel]
    adv = torch.tensor(batch.advantages, dtype=torch.float32)[:, None].expand(n, L - 1)[sel]
    padded = ppo_token_loss(ref_logp, old[:, 1:][sel], adv, cfg).loss.sum() / tokens
    padded.backward()
    g_padded = _grads(model)

    assert logp.shape == ref_logp.shape == (tokens,)
    assert torch.allclose(logp, ref_logp, atol=1e-5), (logp - ref_logp).abs().max()
    assert torch.allclose(ent, ref_ent.detach(), atol=1e-5)
    assert abs(float(packed.detach()) - float(padded.detach())) < 1e-5, (float(packed.detach()), float(padded.detach()))
    assert g_packed.keys() == g_padded.keys() and len(g_packed) > 0
    for k in g_padded:
        assert torch.allclose(g_packed[k], g_padded[k], atol=1e-5, rtol=0), (k, (g_packed[k] - g_padded[k]).abs().max())
    assert max(float(g.abs().max()) for g in g_padded.values()) > 1e-3  # gradients are not trivially zero


def test_packed_sequences_do_not_attend_to_each_other(tiny_model):
    a = random_sequences(1, 10, 30, 500, seed=1)[0]
    b = random_sequences(1, 8, 25, 500, seed=2)[0]
    a2 = {**a, "tokenIds": [(x * 7 + 3) % 500 + 3 for x in a["tokenIds"]]}
    trainer = _trainer(tiny_model)
    out = []
    for first in (a, a2):
        batch = _batch([first, b])
        arrays = pack_sequences(batch.token_ids, batch.loss_mask, batch.old_logprobs, batch.seq_offsets, batch.advantages, [0, 1])
        with torch.no_grad():
            logp, _ = trainer._logprobs(trainer._micro(arrays), 1.0, entropy=False)
        out.append(torch.split(logp, arrays.counts))
    assert not torch.allclose(out[0][0], out[1][0])  # the first sequence changed ...
    assert torch.allclose(out[0][1], out[1][1], atol=1e-6)  # ... and the second one did not notice
    # Alone, the second sequence gets the same logprobs as inside the pack.
    batch = _batch([b])
    arrays = pack_sequences(batch.token_ids, batch.loss_mask, batch.old_logprobs, batch.seq_offsets, batch.advantages, [0])
    with torch.no_grad():
        alone, _ = trainer._logprobs(trainer._micro(arrays), 1.0, entropy=False)
    assert torch.allclose(alone, out[0][1], atol=1e-6)


def test_activation_checkpointing_gives_the_same_step(tiny_model):
    from rstar_trainer.config import OptimizerConfig

    batch = _batch(random_sequences(3, 6, 30, 500, seed=21) + random_sequences(2, 9, 12, 500, seed=22))
    out = []
    for gc in (False, True):
        trainer = _trainer(tiny_model)
        opt = OptimizerConfig.parse({"lr": 1e-3, "microBatch": 2, "microBatchTokens": 80, "gradientCheckpointing": gc})
        out.append(trainer.train_step(batch, LossConfig(), opt, "grpo", 0))
    assert abs(out[0]["loss"] - out[1]["loss"]) < 1e-6 and abs(out[0]["gradNorm"] - out[1]["gradNorm"]) < 1e-5 * max(1.0, out[0]["gradNorm"])
