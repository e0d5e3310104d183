"""The process group the trainer and the engines share for weight updates (SGLang's
``/init_weights_update_group``, vLLM's ``/init_weight_transfer_engine``).

It is a torch.distributed group of its own, outside any default group the process may have (the trainer's
FSDP world, an engine's tensor-parallel world): rank 0 (the trainer) hosts a TCP store at
``master_address:master_port``, every rank joins under the store prefix ``group_name`` — the way SGLang's
engine side builds it, so a real SGLang server and this trainer meet in the same store keys. The backend is
``nccl`` on NVIDIA (RCCL on ROCm builds of torch, same name) and ``gloo`` on CPU; the API is the same.
Collectives on it name the group and pass ranks within it (``group_src``), so no default group is needed.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from .errors import RequestError

BACKENDS = ("gloo", "nccl")


def join_update_group(master_address: str, master_port: int, rank: int, world_size: int, group_name: str, backend: str,
                      timeout_s: float = 600.0, device: torch.device | None = None):
    """Join (rank 0: create) the weight-update group; blocks until all ``world_size`` ranks have joined or
    ``timeout_s`` passes. Returns the group handle for :func:`broadcast`.

    Raises :class:`RequestError` on a bad field (naming it)."""
    if backend not in BACKENDS:
        raise RequestError(f"backend must be one of {', '.join(BACKENDS)} (nccl on GPUs, gloo on CPU), got {backend!r}", "backend")
    if not isinstance(group_name, str) or not group_name:
        raise RequestError("group_name must be a non-empty string", "group_name")
    if not isinstance(world_size, int) or world_size < 2:
        raise RequestError(f"world_size must be an integer >= 2 (the trainer plus at least one engine rank), got {world_size!r}", "world_size")
    if not isinstance(rank, int) or not 0 <= rank < world_size:
        raise RequestError(f"rank {rank!r} must lie in [0, world_size={world_size})", "rank_offset")
    if not isinstance(master_port, int) or not 0 < master_port < 65536:
        raise RequestError(f"master_port must be a TCP port, got {master_port!r}", "master_port")
    timeout = datetime.timedelta(seconds=timeout_s)
    store, rank, world_size = next(c10d.rendezvous(f"tcp://{master_address}:{master_port}", rank, world_size, timeout=timeout))
    store.set_timeout(timeout)
    prefix = dist.PrefixStore(group_name, store)
    kwargs = {"backend_options": None} if _has_param("backend_options") else {"pg_options": None}
    pg, _ = c10d._new_process_group_helper(
        world_size, rank, [], backend, prefix, group_name=group_name, timeout=timeout,
        **({"device_id": device} if backend == "nccl" and device is not None and _has_param("device_id") else {}), **kwargs,
    )
    # Ranks of this group are its own (0 = trainer); record the identity map the collectives look up.
    c10d._world.pg_group_ranks[pg] = {i: i for i in range(world_size)}
    return pg


def _has_param(name: str) -> bool:
    import inspect

    return name in inspect.signature(c10d._new_process_group_helper).parameters


def broadcast(t: torch.Tensor, group) -> None:
    """Broadcast ``t`` from the group's rank 0 (the trainer) to every rank, in place."""
    dist.broadcast(t, group=group, group_src=0)


def destroy(group) -> None:
    """Leave the group (a new one may then be joined under the same name)."""
    try:
        dist.destroy_process_group(group)
    except (AssertionError, ValueError, RuntimeError):
        pass
