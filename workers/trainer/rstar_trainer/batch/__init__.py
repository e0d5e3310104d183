"""Training batches: v1 (JSON / JSON Lines) and v2 (safetensors), read into one :class:`TrainingBatch`."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

from ..errors import BatchFormatError, BatchHashMismatchError
from .model import PROTOCOL_V1, PROTOCOL_V2, TrainingBatch
from .v1_json import canonical_hash_v1, read_v1
from .v2_safetensors import is_safetensors, read_v2, write_v2

__all__ = [
    "PROTOCOL_V1",
    "PROTOCOL_V2",
    "TrainingBatch",
    "canonical_hash_v1",
    "load_batch",
    "read_batch_bytes",
    "resolve_uri",
    "write_v2",
]


def resolve_uri(uri: str) -> str:
    """A local path from ``batchUri`` (a path or a ``file://`` URI). Other schemes are refused."""
    if "://" not in uri:
        return uri
    p = urlparse(uri)
    if p.scheme != "file":
        raise BatchFormatError(
            f"batchUri {uri!r} uses scheme {p.scheme!r}; the worker reads local files only (a path or file://) on the volume it shares with the optimization service",
            "batchUri",
        )
    return unquote(p.path)


def read_batch_bytes(data: bytes, uri: str) -> TrainingBatch:
    """Parse v2 (safetensors) or v1 (JSON / JSON Lines) by content."""
    if is_safetensors(data):
        return read_v2(data, uri)
    if data.lstrip()[:1] == b"{":
        return read_v1(data, uri)
    raise BatchFormatError(f"batch {uri} is neither a v2 safetensors file nor v1 JSON / JSON Lines", "batchUri")


def load_batch(uri: str, expected_hash: str | None = None) -> TrainingBatch:
    """Read the batch at ``uri`` and, when ``expected_hash`` is given, refuse a hash mismatch with
    :class:`BatchHashMismatchError` (nothing is trained)."""
    path = resolve_uri(uri)
    if not os.path.isfile(path):
        raise BatchFormatError(f"batchUri {uri!r}: no such file (the worker resolves it to {path})", "batchUri")
    with open(path, "rb") as f:
        data = f.read()
    batch = read_batch_bytes(data, uri)
    if expected_hash is not None and batch.batch_hash != expected_hash:
        raise BatchHashMismatchError(expected_hash, batch.batch_hash, uri)
    return batch
