"""Memory occupation of the reference engine: SGLang's ``release_memory_occupation`` /
``resume_memory_occupation`` pair, so a trainer can share the accelerator with the engine.

SGLang (started with ``--enable-memory-saver``) frees the regions named by ``tags`` — ``weights`` and
``kv_cache`` — on ``POST /release_memory_occupation {tags?}`` and allocates them again on ``POST
/resume_memory_occupation {tags?}`` (absent tags = both). The reference engine does the same for real:

- ``weights``: every parameter moves to the ``meta`` device (storage freed; the small buffers such as
  rotary frequencies are kept on the CPU); resuming allocates empty storage on the engine's device and
  reads the weights of the checkpoint last loaded (``model_path``) again, verified by its manifest;
- ``kv_cache``: the engine's KV cache lives only with running requests, so releasing it means admitting
  none: the release waits until the running requests have finished.

While any region is released, generation is refused with :class:`MemoryReleasedError` (HTTP 503, as an
engine that cannot serve), requests still waiting are aborted, and a weight update is refused until the
weights are resumed (SGLang's order: resume ``weights``, update, resume ``kv_cache``).
"""

from __future__ import annotations

import gc

import torch

from ..errors import RequestError, RstarWorkerError

TAGS = ("weights", "kv_cache")


class MemoryReleasedError(RstarWorkerError):
    """Generation or a weight load asked of an engine whose memory is released."""

    code = "memory_released"
    status = 503


def parse_tags(body: dict | None) -> list[str]:
    """The ``tags`` of a release/resume body: a list drawn from :data:`TAGS`; absent or null = all.
    :class:`RequestError` on ``tags`` otherwise."""
    tags = (body or {}).get("tags")
    if tags is None:
        return list(TAGS)
    if not isinstance(tags, list) or not tags or any(t not in TAGS for t in tags):
        raise RequestError(f"tags must be a non-empty list drawn from {list(TAGS)} (or absent for all), got {tags!r}", "tags")
    return [t for t in TAGS if t in tags]


def offload_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Free the parameters' storage (moved to ``meta``); returns CPU copies of the buffers to put back."""
    buffers = {n: b.detach().to("cpu", copy=True) for n, b in model.named_buffers()}
    model.to("meta")
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return buffers


def allocate_weights(model: torch.nn.Module, device: torch.device, buffers: dict[str, torch.Tensor]) -> None:
    """Give the parameters fresh (uninitialised) storage on ``device`` and restore the buffers; the
    caller then loads the weights into it."""
    model.to_empty(device=device)
    with torch.no_grad():
        for n, b in model.named_buffers():
            if n in buffers:
                b.copy_(buffers[n])


def weights_on_meta(model: torch.nn.Module) -> bool:
    return any(p.is_meta for p in model.parameters())
