"""The reference engine's model: batched prefill and decode over a left-padded KV cache (transformers).

A running batch keeps one ``DynamicCache`` whose rows are left-padded to a common length, a 2-D
attention mask (0 on padding) and each row's true length (its next position id). Rows join by
left-padding both sides to one length and concatenating, leave by index selection; columns that are
padding in every row are trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class BatchState:
    cache: object
    attn: torch.Tensor  # [B, S] int64, 1 = real token
    lengths: torch.Tensor  # [B] int64, real tokens per row

    @property
    def size(self) -> int:
        return int(self.attn.shape[0])


class Runner:
    """Loads a causal LM for inference and runs prefill/decode steps; logits come back as fp32."""

    def __init__(self, model_dir: str, device: torch.device, dtype: torch.dtype):
        from transformers import AutoModelForCausalLM

        self.device = device
        self.dtype = dtype
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device).eval()
        self.config = self.model.config
        self.layers = int(self.config.num_hidden_layers)
        self.pad_id = int(self.config.pad_token_id if self.config.pad_token_id is not None else 0)

    def _new_cache(self, kv: list[tuple[torch.Tensor, torch.Tensor]]):
        from transformers import DynamicCache

        c = DynamicCache(config=self.config)
        for i, (k, v) in enumerate(kv):
            c.update(k, v, i)
        return c

    def _kv(self, state: BatchState) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer.keys, layer.values) for layer in state.cache.layers]

    @torch.inference_mode()
    def prefill(self, seqs: list[list[int]]) -> tuple[BatchState, torch.Tensor]:
        """Run the prompts (each: every token so far) left-padded in one batch; returns the batch state and
        the next-token logits [B, V]."""
        B, L = len(seqs), max(len(s) for s in seqs)
        ids = torch.full((B, L), self.pad_id, dtype=torch.long)
        attn = torch.zeros((B, L), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, L - len(s) :] = torch.tensor(s, dtype=torch.long)
            attn[i, L - len(s) :] = 1
        ids, attn = ids.to(self.device), attn.to(self.device)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        cache = self._new_cache([])
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache, use_cache=True, logits_to_keep=1)
        lengths = attn.sum(-1)
        return BatchState(cache=cache, attn=attn, lengths=lengths), out.logits[:, -1, :].float()

    @torch.inference_mode()
    def decode(self, state: BatchState, tokens: list[int]) -> torch.Tensor:
        """Append one token per row and return the next-token logits [B, V]."""
        ids = torch.tensor(tokens, dtype=torch.long, device=self.device)[:, None]
        attn = torch.cat([state.attn, torch.ones((state.size, 1), dtype=torch.long, device=self.device)], dim=1)
        pos = state.lengths[:, None]
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=state.cache, use_cache=True)
        state.attn = attn
        state.lengths = state.lengths + 1
        return out.logits[:, -1, :].float()

    def select(self, state: BatchState, rows: list[int]) -> BatchState:
        """Keep only ``rows`` (in that order), then trim all-padding columns."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.device)
        kv = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in self._kv(state)]
        return self._trim(kv, state.attn.index_select(0, idx), state.lengths.index_select(0, idx))

    def merge(self, a: BatchState | None, b: BatchState) -> BatchState:
        """Rows of ``a`` then rows of ``b`` in one state (left-padding the shorter one)."""
        if a is None or a.size == 0:
            return b
        S = max(a.attn.shape[1], b.attn.shape[1])

        def pad(t: torch.Tensor, s: int, dim: int) -> torch.Tensor:
            if s == 0:
                return t
            shape = list(t.shape)
            shape[dim] = s
            return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=dim)

        da, db = S - a.attn.shape[1], S - b.attn.shape[1]
        kv = [
            (torch.cat([pad(ka, da, 2), pad(kb, db, 2)], 0), torch.cat([pad(va, da, 2), pad(vb, db, 2)], 0))
            for (ka, va), (kb, vb) in zip(self._kv(a), self._kv(b))
        ]
        attn = torch.cat([pad(a.attn, da, 1), pad(b.attn, db, 1)], 0)
        return BatchState(cache=self._new_cache(kv), attn=attn, lengths=torch.cat([a.lengths, b.lengths]))

    def _trim(self, kv, attn: torch.Tensor, lengths: torch.Tensor) -> BatchState:
        c = int(attn.shape[1] - lengths.max().item()) if attn.shape[0] else 0
        if c > 0:
            kv = [(k[:, :, c:], v[:, :, c:]) for k, v in kv]
            attn = attn[:, c:]
        return BatchState(cache=self._new_cache(kv), attn=attn, lengths=lengths)

    def load_weights(self, tensors: dict[str, torch.Tensor]) -> list[str]:
        """Copy ``tensors`` (a Hugging Face state dict, possibly without a tied ``lm_head``) into the
        model; returns the parameter names the tensors did not cover (empty when complete)."""
        own = self.model.state_dict()
        tied = bool(getattr(self.config, "tie_word_embeddings", False))
        missing = []
        with torch.no_grad():
            for name, p in own.items():
                t = tensors.get(name)
                if t is None and tied and name == "lm_head.weight":
                    t = tensors.get("model.embed_tokens.weight")
                if t is None:
                    missing.append(name)
                    continue
                if tuple(t.shape) != tuple(p.shape):
                    raise ValueError(f"{name}: checkpoint shape {tuple(t.shape)} != model shape {tuple(p.shape)}")
                p.copy_(t.to(p.dtype))
        return missing
