"""Build a model without weights and fill each rank's FSDP2 shard straight from the safetensors files.

No rank ever holds the whole model: parameters are created on the ``meta`` device (no storage),
``fully_shard`` splits them, ``to_empty`` allocates only this rank's rows, and each shard is read from
the checkpoint with positioned reads of just those rows (dim 0, as FSDP2 shards: ``torch.chunk``
semantics, ceil(rows / world) per rank). Plain reads rather than mmap, so the checkpoint's pages are
not counted in the process's resident memory either.

safetensors layout (https://github.com/huggingface/safetensors): u64 little-endian header length N,
N bytes of JSON ``{name: {dtype, shape, data_offsets: [begin, end]}}`` (offsets from the end of the
header), then the data, row-major. Sharded checkpoints list their files in ``model.safetensors.index.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct

import torch

from .errors import ModelDirError

_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


@contextlib.contextmanager
def parameters_on_meta():
    """Inside this block ``nn.Module`` parameters are registered on the ``meta`` device (no memory)
    while buffers (rotary frequencies and the like, computed in ``__init__``) stay real. The same idea
    as accelerate's ``init_empty_weights(include_buffers=False)``."""
    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.detach().to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


class SafetensorsIndex:
    """Where each tensor of a model directory lives: (file, dtype, shape, absolute byte offset)."""

    def __init__(self, model_dir: str):
        index = os.path.join(model_dir, "model.safetensors.index.json")
        if os.path.isfile(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        else:
            files = sorted(n for n in os.listdir(model_dir) if n.endswith(".safetensors"))
        if not files:
            raise ModelDirError(f"model directory {model_dir!r} has no *.safetensors weights; sharded loading reads safetensors only (convert *.bin with save_pretrained)", "model")
        self.entries: dict[str, tuple[str, torch.dtype, list[int], int]] = {}
        for fn in files:
            path = os.path.join(model_dir, fn)
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(n))
            for name, e in header.items():
                if name == "__metadata__":
                    continue
                if e["dtype"] not in _DTYPES:
                    raise ModelDirError(f"{path}: tensor {name} has dtype {e['dtype']}; the trainer loads F32, F16, BF16 or F64 weights", "model")
                self.entries[name] = (path, _DTYPES[e["dtype"]], list(e["shape"]), 8 + n + int(e["data_offsets"][0]))

    def read_rows(self, name: str, start: int, stop: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows ``start:stop`` (dim 0) of tensor ``name`` on the CPU: into ``out`` when given (a contiguous
        CPU tensor of the file's dtype and the rows' size: no intermediate copy), else a new tensor."""
        path, dtype, shape, offset = self.entries[name]
        row = 1
        for d in shape[1:]:
            row *= d
        if out is None:
            out = torch.empty([stop - start, *shape[1:]] if shape else [], dtype=dtype)
        if out.numel() == 0:
            return out
        itemsize = torch.empty((), dtype=dtype).element_size()
        buf = out.reshape(-1).view(torch.uint8).numpy()
        with open(path, "rb", buffering=0) as f:
            f.seek(offset + start * row * itemsize)
            got = f.readinto(memoryview(buf))
        if got != buf.nbytes:
            raise ModelDirError(f"{path}: tensor {name} is truncated (read {got} of {buf.nbytes} bytes)", "model")
        return out


def shard_rows(dim0: int, world: int, rank: int) -> tuple[int, int]:
    """The rows FSDP2 gives ``rank``: ``torch.chunk`` of ``dim0`` rows into ``world`` parts."""
    per = -(-dim0 // world) if dim0 else 0
    start = min(rank * per, dim0)
    return start, min(start + per, dim0)


@torch.no_grad()
def load_sharded(model: torch.nn.Module, model_dir: str, rank: int, world: int) -> None:
    """Fill the (FSDP2-sharded, already ``to_empty``) parameters of ``model`` from ``model_dir``: each
    rank reads only its own rows. A parameter the checkpoint lacks (other than a tied output layer,
    which shares the embedding's storage) raises :class:`ModelDirError` naming it."""
    from torch.distributed.tensor import DTensor, Shard

    index = SafetensorsIndex(model_dir)
    missing = []
    for name, p in model.named_parameters():  # a tied lm_head shares the embedding's parameter: listed once
        if name not in index.entries:
            missing.append(name)
            continue
        _path, _dt, shape, _off = index.entries[name]
        if list(p.shape) != shape:
            raise ModelDirError(f"{model_dir}: tensor {name} has shape {shape}, the model built from config.json expects {list(p.shape)}", "model")
        if isinstance(p, DTensor):
            if len(p.placements) != 1 or p.placements[0] != Shard(0):
                raise RuntimeError(f"parameter {name} is placed {p.placements}; sharded loading expects FSDP2's Shard(0)")
            local = p.to_local()
            start, stop = shard_rows(shape[0] if shape else 1, world, rank)
            if stop - start != (local.shape[0] if local.dim() else 1):
                raise RuntimeError(f"parameter {name}: this rank holds {tuple(local.shape)}, expected rows {start}:{stop} of {shape}")
        else:
            local, start, stop = p, 0, shape[0] if shape else 1
        if local.device.type == "cpu" and local.dtype == index.entries[name][1] and local.is_contiguous():
            index.read_rows(name, start, stop, out=local)  # straight into the shard's storage
        else:
            local.copy_(index.read_rows(name, start, stop).reshape(local.shape))
    if missing:
        raise ModelDirError(f"{model_dir}: the checkpoint lacks {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''} (it does not match config.json)", "model")
