"""Log pi(target | prefix) and entropy from the last hidden states, a chunk of rows at a time.

The full-vocabulary logits of a long pack do not fit: 16k tokens x 152k vocabulary in fp32 is 10 GB,
and autograd would keep the log-softmax of every chunk for the backward pass. :class:`ChunkedTargetLogprob`
keeps only the hidden rows, the weight and the targets; its backward recomputes each chunk's logits.
Peak extra memory: one chunk of ``rows x vocab`` fp32 (``chunk_bytes``, 256 MiB by default) plus the
fp32 gradient of the weight.

Gradient (z = logits / temperature, p = softmax(z), g = dL/dlogp):
``dL/dlogits = g * (onehot(target) - p) / temperature``, then ``dL/dh = dL/dlogits @ W`` and
``dL/dW = dL/dlogits^T @ h``. Entropy ``logsumexp(z) - sum(p * z)`` carries no gradient (a metric).

:class:`LogprobHead` is the model's ``lm_head`` with this mode added (its class is swapped, so parameter
names, weight tying and FSDP sharding stay as they were): while a request is set, ``forward`` returns
``[1, n, 2]`` = (logprob, entropy) at the requested rows instead of logits. Running inside the model's
own forward keeps FSDP's unshard/reshard of the head's weight exactly as for plain logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

DEFAULT_CHUNK_BYTES = 256 << 20


def _compute_dtype(t: torch.Tensor, w: torch.Tensor) -> torch.dtype:
    dev = t.device.type
    if torch.is_autocast_enabled(dev):
        return torch.get_autocast_dtype(dev)
    return w.dtype


class ChunkedTargetLogprob(torch.autograd.Function):
    """(logprob [n], entropy [n]) of ``targets`` given hidden rows ``h`` [n, H] and the output layer
    ``w`` [V, H] (+ ``b`` [V] or None), at ``temperature``, ``rows`` rows per chunk."""

    @staticmethod
    def forward(ctx, h, w, b, targets, temperature: float, rows: int):  # noqa: D417 - autograd signature
        cdt = _compute_dtype(h, w)
        n = h.shape[0]
        logp = torch.empty(n, dtype=torch.float32, device=h.device)
        ent = torch.empty(n, dtype=torch.float32, device=h.device)
        with torch.autocast(h.device.type, enabled=False):
            wc = w.to(cdt)
            for a in range(0, n, rows):
                z = (h[a : a + rows].to(cdt) @ wc.t()).float()
                if b is not None:
                    z = z + b.float()
                if temperature != 1.0:
                    z = z / temperature
                lse = torch.logsumexp(z, dim=-1)
                logp[a : a + rows] = z.gather(-1, targets[a : a + rows, None]).squeeze(-1) - lse
                p = torch.softmax(z, dim=-1)
                ent[a : a + rows] = lse - (p * z).sum(-1)
                del z, p
        ctx.save_for_backward(h, w, b, targets)
        ctx.cdt, ctx.temperature, ctx.rows = cdt, temperature, rows
        ctx.mark_non_differentiable(ent)
        return logp, ent

    @staticmethod
    def backward(ctx, g_logp, _g_ent):
        h, w, b, targets = ctx.saved_tensors
        cdt, temperature, rows = ctx.cdt, ctx.temperature, ctx.rows
        n = h.shape[0]
        gh = torch.empty_like(h) if ctx.needs_input_grad[0] else None
        gw = torch.zeros(w.shape, dtype=torch.float32, device=w.device) if ctx.needs_input_grad[1] else None
        gb = torch.zeros(w.shape[0], dtype=torch.float32, device=w.device) if b is not None and ctx.needs_input_grad[2] else None
        with torch.autocast(h.device.type, enabled=False):
            wc = w.to(cdt)
            for a in range(0, n, rows):
                hc = h[a : a + rows].to(cdt)
                z = (hc @ wc.t()).float()
                if b is not None:
                    z = z + b.float()
                if temperature != 1.0:
                    z = z / temperature
                g = torch.softmax(z, dim=-1)
                del z
                gc = g_logp[a : a + rows].float()
                g.mul_(-gc[:, None])
                g.scatter_add_(-1, targets[a : a + rows, None], gc[:, None])
                if temperature != 1.0:
                    g.div_(temperature)
                if gh is not None:
                    gh[a : a + rows] = (g.to(cdt) @ wc).to(h.dtype)
                if gw is not None:
                    gw += (g.t().to(cdt) @ hc).float()
                if gb is not None:
                    gb += g.sum(0)
                del g
        return gh, None if gw is None else gw.to(w.dtype), None if gb is None else gb.to(b.dtype), None, None, None


@dataclass
class LogprobRequest:
    """What :class:`LogprobHead` computes on its next call: the rows of the flattened hidden states
    [T] to score, their targets, the temperature and the rows per chunk."""

    rows: torch.Tensor
    targets: torch.Tensor
    temperature: float = 1.0
    chunk_rows: int = 1024


class LogprobHead(torch.nn.Linear):
    """``nn.Linear`` whose forward returns (logprob, entropy) of requested targets while
    ``self.logprob_request`` is set (plain logits otherwise). Installed with :func:`install_logprob_head`."""

    logprob_request: LogprobRequest | None = None

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:  # noqa: D102
        req = self.logprob_request
        if req is None:
            return super().forward(hidden)
        flat = hidden.reshape(-1, hidden.shape[-1])
        h = flat.index_select(0, req.rows)
        logp, ent = ChunkedTargetLogprob.apply(h, self.weight, self.bias, req.targets, req.temperature, req.chunk_rows)
        return torch.stack([logp, ent], dim=-1)[None]


def install_logprob_head(model: torch.nn.Module) -> LogprobHead:
    """Turn the model's output layer (``get_output_embeddings()``, an ``nn.Linear``) into a
    :class:`LogprobHead` in place and return it. Raises ``TypeError`` for any other output layer."""
    head = model.get_output_embeddings()
    if type(head) is LogprobHead:
        return head
    if type(head) is not torch.nn.Linear:
        raise TypeError(f"the model's output layer is {type(head).__name__}, not nn.Linear; the chunked logprob head cannot wrap it")
    head.__class__ = LogprobHead
    head.logprob_request = None
    return head


def chunk_rows_for(vocab: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Rows per chunk so that one chunk's fp32 logits take at most ``chunk_bytes`` (at least 1 row)."""
    return max(1, chunk_bytes // (4 * vocab))
