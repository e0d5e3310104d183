"""AdamW state on disk, sharded: each rank writes and reads only its own part.

The state is two fp32 moments per parameter (8 bytes/param: ~112 GB at 14B), so it is never gathered
on one rank. It is saved with ``torch.distributed.checkpoint`` (DCP): a directory with one ``.distcp``
file per rank plus ``.metadata`` mapping every tensor's global shape and each shard's offsets; loading
plans reads by those offsets, so a state saved by N ranks resumes on M ranks, or in one process, and
the other way round. Under torchrun every rank must see the directory (``/shared`` on every node).

States written by earlier versions of the worker (one ``torch.save`` file of the full state dict) are
still read: rank 0 loads the file and broadcasts it.
"""

from __future__ import annotations

import os
import shutil

import torch

from .distributed import DistContext


def save_optimizer(model: torch.nn.Module, optim: torch.optim.Optimizer, path: str, ctx: DistContext) -> None:
    """Write the state of ``optim`` to the directory ``path`` (via ``path + '.tmp'``, renamed into place
    by rank 0 once every rank has written). Collective."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    tmp = path.rstrip("/") + ".tmp"
    if ctx.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.dirname(tmp) or ".", exist_ok=True)
    ctx.broadcast("optimizer-save")  # nobody writes into tmp before it was cleared
    state = {"optimizer": get_optimizer_state_dict(model, optim)}
    dcp.save(state, checkpoint_id=tmp, process_group=ctx.control if ctx.is_dist else None, no_dist=not ctx.is_dist)
    ctx.broadcast("optimizer-written")
    if ctx.is_main:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
        os.replace(tmp, path)
    ctx.broadcast("optimizer-saved")


def load_optimizer(model: torch.nn.Module, optim: torch.optim.Optimizer, path: str, ctx: DistContext) -> None:
    """Restore the state of ``optim`` (freshly built over ``model``) from ``path``: a DCP directory written
    by :func:`save_optimizer` with any number of ranks, or a legacy full-state file. Collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict, set_optimizer_state_dict

    if os.path.isfile(path):
        state = torch.load(path, map_location="cpu", weights_only=True) if ctx.is_main else {}
        set_optimizer_state_dict(model, optim, optim_state_dict=state,
                                 options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=ctx.is_dist))
        return
    import torch.distributed.checkpoint as dcp

    # get_optimizer_state_dict first creates the (lazy) AdamW state with a zero-lr step, giving DCP the
    # tensors, already sharded like the parameters, to read into.
    state = {"optimizer": get_optimizer_state_dict(model, optim)}
    dcp.load(state, checkpoint_id=path, process_group=ctx.control if ctx.is_dist else None, no_dist=not ctx.is_dist)
    set_optimizer_state_dict(model, optim, optim_state_dict=state["optimizer"])
