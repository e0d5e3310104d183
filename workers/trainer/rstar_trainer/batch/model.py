"""The in-memory training batch, whatever format it came in."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BatchFormatError

PROTOCOL_V1 = "rstar.grpo-batch/1"
PROTOCOL_V2 = "rstar.grpo-batch/2"


@dataclass
class TrainingBatch:
    """One step's sequences as flat arrays (sequence ``i`` spans ``seq_offsets[i]:seq_offsets[i+1]``).

    - ``token_ids`` int64 [T]: prompt ++ response ids of every sequence, concatenated.
    - ``loss_mask`` uint8 [T]: 1 on model (sampled) tokens, 0 on prompt and tool-response tokens.
    - ``old_logprobs`` float64 [T]: the sampling engine's log pi_old(token | prefix) on model tokens, 0 elsewhere.
    - ``seq_offsets`` int64 [N+1], ``advantages`` float64 [N] (broadcast over the sequence's model tokens).
    - ``batch_hash``: the content hash computed over what was read (v1: the canonical JSON hash of
      libs/grpo ``buildTrainingBatch``; v2: sha256 of the file bytes).
    """

    protocol: str
    token_ids: np.ndarray
    loss_mask: np.ndarray
    old_logprobs: np.ndarray
    seq_offsets: np.ndarray
    advantages: np.ndarray
    batch_hash: str
    rollout_ids: list[str] = field(default_factory=list)
    run_id: str | None = None
    step: int | None = None
    policy_version: int | None = None
    meta: dict = field(default_factory=dict)

    @property
    def num_sequences(self) -> int:
        return int(len(self.seq_offsets) - 1)

    @property
    def num_tokens(self) -> int:
        """Model tokens (the token-mean denominator)."""
        return int(self.loss_mask.sum())

    @property
    def total_tokens(self) -> int:
        return int(len(self.token_ids))

    def sequence(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        a, b = int(self.seq_offsets[i]), int(self.seq_offsets[i + 1])
        return self.token_ids[a:b], self.loss_mask[a:b], self.old_logprobs[a:b], float(self.advantages[i])

    def validate(self, uri: str) -> None:
        """Check shapes and values; raise :class:`BatchFormatError` naming the first problem."""
        t = len(self.token_ids)
        n = self.num_sequences
        if n < 1:
            raise BatchFormatError(f"batch {uri} has no sequences", "sequences")
        if len(self.loss_mask) != t or len(self.old_logprobs) != t:
            raise BatchFormatError(
                f"batch {uri}: token_ids ({t}), loss_mask ({len(self.loss_mask)}) and old_logprobs ({len(self.old_logprobs)}) must have the same length",
                "loss_mask",
            )
        if len(self.advantages) != n:
            raise BatchFormatError(f"batch {uri}: {n} sequences but {len(self.advantages)} advantages", "advantages")
        offs = self.seq_offsets
        if offs[0] != 0 or offs[-1] != t or np.any(np.diff(offs) < 2):
            raise BatchFormatError(
                f"batch {uri}: seq_offsets must start at 0, end at {t} and give every sequence at least 2 tokens", "seq_offsets"
            )
        if np.any((self.loss_mask != 0) & (self.loss_mask != 1)):
            raise BatchFormatError(f"batch {uri}: loss_mask values must be 0 or 1", "loss_mask")
        if np.any(self.loss_mask[offs[:-1]] != 0):
            i = int(np.nonzero(self.loss_mask[offs[:-1]])[0][0])
            raise BatchFormatError(
                f"batch {uri}: sequence {i} has loss_mask 1 on its first token; the first token has no prefix to predict it (prompts are masked 0)",
                f"sequences.{i}.lossMask",
            )
        if np.any(self.token_ids < 0):
            raise BatchFormatError(f"batch {uri}: token ids must be >= 0", "token_ids")
        if not np.all(np.isfinite(self.old_logprobs)) or not np.all(np.isfinite(self.advantages)):
            raise BatchFormatError(f"batch {uri}: old_logprobs and advantages must be finite numbers", "old_logprobs")
        bad = (self.loss_mask == 1) & (self.old_logprobs > 1e-4)
        if np.any(bad):
            j = int(np.nonzero(bad)[0][0])
            raise BatchFormatError(
                f"batch {uri}: old_logprobs[{j}] = {self.old_logprobs[j]} is a positive log-probability; send natural-log probabilities (<= 0)",
                "old_logprobs",
            )
