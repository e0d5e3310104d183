"""Process layout: one process, or ``torchrun`` with one process per accelerator (FSDP2), on one node or
several (``--nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT``: the ranks of all nodes form one
world; global rank 0 serves HTTP).

Under ``torchrun`` every rank loads the model and takes part in each step; rank 0 alone serves HTTP and
sends each command to the other ranks over a CPU (gloo) control group, so idle ranks wait on a socket,
not on an accelerator collective. The code uses ``torch.cuda`` only through APIs that ROCm builds of
torch map to HIP (device count, set_device); the collective backend is ``nccl`` (RCCL on ROCm) on
accelerators and ``gloo`` on CPU.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .errors import RequestError

# Overrides the collective backend (nccl | gloo). NCCL refuses two ranks on one GPU; gloo is how the GPU
# check runs its two-process case on a single GPU.
BACKEND_ENV = "RSTAR_TRAINER_BACKEND"


@dataclass
class DistContext:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    control: object | None = None  # the gloo group commands travel on

    @property
    def is_dist(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj):
        """Rank 0 sends ``obj``; every rank returns it (a no-op in one process)."""
        if not self.is_dist:
            return obj
        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def gather_errors(self, err: str | None) -> list[str]:
        """Every rank's error text (None when it succeeded), collected on all ranks."""
        if not self.is_dist:
            return [err] if err else []
        out: list = [None] * self.world
        dist.all_gather_object(out, err, group=self.control)
        return [f"rank {i}: {e}" for i, e in enumerate(out) if e]

    def all_reduce(self, t: torch.Tensor, op=None) -> torch.Tensor:
        if self.is_dist:
            dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
        return t


def pick_device(option: str, local_rank: int) -> torch.device:
    """``auto``: the accelerator of this local rank when torch sees one (CUDA or ROCm/HIP), else CPU."""
    if option == "cpu":
        return torch.device("cpu")
    if option in ("auto", "cuda"):
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank % torch.cuda.device_count())
            return torch.device("cuda", local_rank % torch.cuda.device_count())
        if option == "cuda":
            raise RequestError("--device cuda but torch sees no accelerator (CUDA or ROCm); use --device cpu", "device")
        return torch.device("cpu")
    raise RequestError(f"--device must be auto, cpu or cuda, got {option!r}", "device")


def init_context(device_option: str = "auto") -> DistContext:
    """Read ``torchrun``'s environment (RANK, WORLD_SIZE, LOCAL_RANK) and join the process group."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(device_option, local_rank)
    if world <= 1:
        return DistContext(device=device)
    backend = os.environ.get(BACKEND_ENV) or ("nccl" if device.type == "cuda" else "gloo")
    if backend not in ("nccl", "gloo"):
        raise RequestError(f"{BACKEND_ENV}={backend!r}: use nccl or gloo", BACKEND_ENV)
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(minutes=30), device_id=device if device.type == "cuda" and backend == "nccl" else None)
    # Idle ranks wait here between steps for as long as the service runs.
    control = dist.new_group(backend="gloo", timeout=datetime.timedelta(days=30))
    return DistContext(rank=rank, world=world, local_rank=local_rank, device=device, control=control)


def shutdown(ctx: DistContext) -> None:
    if ctx.is_dist and dist.is_initialized():
        dist.destroy_process_group()
