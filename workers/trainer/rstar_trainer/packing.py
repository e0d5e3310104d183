"""How a mini-batch's sequences are spread over ranks and cut into packed micro-batches.

A micro-batch is a *pack*: its sequences laid end to end in one row ``[1, T]`` with position ids that
restart at 0 at every sequence, so no token is spent on padding. Attention stays inside each sequence:
transformers derives a block-diagonal causal mask from the restarting position ids (SDPA / eager, CPU)
or the varlen ``cu_seqlens`` of flash-attention (GPU) — ``masking_utils.find_packed_sequence_indices``.

Ranks get sequences by tokens, not by count: longest first, each to the rank with the fewest tokens so
far (LPT, Graham 1969: the heaviest rank carries at most the mean plus one sequence). Every rank must run
the same number of forward/backward passes (FSDP's collectives pair them up), so a rank with fewer packs
splits its largest packs; only a rank with fewer sequences than that count runs zero-weight fillers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def balance_ranks(lengths: dict[int, int], world: int) -> list[list[int]]:
    """Sequence ids per rank, balanced by tokens. ``lengths`` maps a sequence id to its token count.
    Deterministic: ties go to the lower sequence id and the lower rank. Each rank's list is ordered
    longest first."""
    loads = [0] * world
    shares: list[list[int]] = [[] for _ in range(world)]
    for i in sorted(lengths, key=lambda k: (-lengths[k], k)):
        r = min(range(world), key=lambda q: (loads[q], q))
        shares[r].append(i)
        loads[r] += lengths[i]
    return shares


def pack_micros(seqs: list[int], lengths: dict[int, int], max_seqs: int, max_tokens: int | None) -> list[list[int]]:
    """First-fit decreasing packs of at most ``max_seqs`` sequences and ``max_tokens`` tokens (a sequence
    longer than ``max_tokens`` gets a pack of its own)."""
    packs: list[list[int]] = []
    used: list[int] = []
    for i in sorted(seqs, key=lambda k: (-lengths[k], k)):
        n = lengths[i]
        for p, pack in enumerate(packs):
            if len(pack) < max_seqs and (max_tokens is None or used[p] + n <= max_tokens):
                pack.append(i)
                used[p] += n
                break
        else:
            packs.append([i])
            used.append(n)
    return packs


def split_to_count(packs: list[list[int]], lengths: dict[int, int], count: int) -> list[list[int]]:
    """Split the packs holding the most tokens in two (alternating sequences, so both halves get long and
    short ones) until there are ``count`` packs or every pack holds one sequence. Splitting never breaks a
    cap the packs met."""
    packs = [list(p) for p in packs]
    while len(packs) < count:
        splittable = [p for p in packs if len(p) > 1]
        if not splittable:
            break
        big = max(splittable, key=lambda p: sum(lengths[i] for i in p))
        packs.remove(big)
        ordered = sorted(big, key=lambda k: (-lengths[k], k))
        packs.extend([ordered[0::2], ordered[1::2]])
    return packs


def plan_micro_batches(lengths: dict[int, int], world: int, max_seqs: int, max_tokens: int | None) -> list[list[list[int] | None]]:
    """Packs of every rank for the sequences in ``lengths``: ``plan[rank][k]`` is the k-th pack of that
    rank (a list of sequence ids) or ``None`` for a zero-weight filler. All ranks get the same count."""
    shares = balance_ranks(lengths, world)
    packs = [pack_micros(s, lengths, max_seqs, max_tokens) for s in shares]
    count = max(1, max(len(p) for p in packs))
    out: list[list[list[int] | None]] = []
    for p in packs:
        p = split_to_count(p, lengths, count)
        out.append([*p, *([None] * (count - len(p)))])
    return out


@dataclass
class PackedArrays:
    """One pack as numpy arrays (the trainer moves them to its device).

    - ``ids`` / ``pos`` int64 [T]: the tokens and their position inside their own sequence;
    - ``rows`` int64 [n]: positions whose *next* token is a model token (the logits there score it);
    - ``targets`` int64 [n], ``old`` float64 [n], ``adv`` float64 [n]: that token, the engine's logprob
      of it and its sequence's advantage;
    - ``counts``: model tokens per sequence of the pack, in pack order (to split per-token results).
    """

    seqs: list[int]
    ids: np.ndarray
    pos: np.ndarray
    rows: np.ndarray
    targets: np.ndarray
    old: np.ndarray
    adv: np.ndarray
    counts: list[int]


def pack_sequences(token_ids: np.ndarray, loss_mask: np.ndarray, old_logprobs: np.ndarray, seq_offsets: np.ndarray,
                   advantages: np.ndarray, seqs: list[int]) -> PackedArrays:
    """Lay the sequences ``seqs`` (ids into the flat batch arrays, see ``TrainingBatch``) end to end."""
    ids, pos, rows, targets, old, adv, counts = [], [], [], [], [], [], []
    at = 0
    for i in seqs:
        a, b = int(seq_offsets[i]), int(seq_offsets[i + 1])
        n = b - a
        ids.append(token_ids[a:b])
        pos.append(np.arange(n, dtype=np.int64))
        # Token j (j >= 1) of the sequence is scored by the logits at its position j - 1.
        j = np.nonzero(loss_mask[a + 1 : b])[0] + 1
        rows.append(at + j - 1)
        targets.append(token_ids[a + j])
        old.append(old_logprobs[a + j])
        adv.append(np.full(len(j), advantages[i], dtype=np.float64))
        counts.append(len(j))
        at += n
    cat = np.concatenate
    return PackedArrays(
        seqs=list(seqs), ids=cat(ids).astype(np.int64), pos=cat(pos), rows=cat(rows).astype(np.int64),
        targets=cat(targets).astype(np.int64), old=cat(old).astype(np.float64), adv=cat(adv), counts=counts,
    )


def filler_pack(token_ids: np.ndarray, seq_offsets: np.ndarray) -> PackedArrays:
    """The smallest pass that keeps a rank in step: the first two tokens of sequence 0, one scored row."""
    a = int(seq_offsets[0])
    ids = token_ids[a : a + 2].astype(np.int64)
    return PackedArrays(seqs=[], ids=ids, pos=np.arange(2, dtype=np.int64), rows=np.zeros(1, dtype=np.int64),
                        targets=ids[1:2].copy(), old=np.zeros(1), adv=np.zeros(1), counts=[])


def pad_sequences(batch) -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor"]:
    """The whole batch as padded [B, L] tensors (CPU): token ids, attention mask (1 on real tokens), loss mask
    and old logprobs (float32), each sequence left-aligned and zero-padded to the longest. The padded
    reference that packed batches are checked against (tests/test_packing.py, gpu-check/trainer_packing_check.py);
    the trainer itself never pads."""
    import torch

    n = len(batch.seq_offsets) - 1
    lens = [int(batch.seq_offsets[i + 1] - batch.seq_offsets[i]) for i in range(n)]
    width = max(lens)
    ids = torch.zeros(n, width, dtype=torch.long)
    attn = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width)
    old = torch.zeros(n, width)
    for i in range(n):
        t, lm, lp, _ = batch.sequence(i)
        ids[i, : lens[i]] = torch.from_numpy(t)
        attn[i, : lens[i]] = 1
        mask[i, : lens[i]] = torch.from_numpy(lm.astype(np.float32))
        old[i, : lens[i]] = torch.from_numpy(lp.astype(np.float32))
    return ids, attn, mask, old

