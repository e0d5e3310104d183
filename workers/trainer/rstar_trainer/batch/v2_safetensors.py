"""Batch format v2: one safetensors file written by TypeScript (libs/grpo ``writeBatchV2``).

Byte layout (both writers produce identical bytes for the same batch):

- 8 bytes: little-endian u64 ``N``, the header length;
- ``N`` bytes: the header, compact JSON (no spaces), padded with spaces so the data starts at a multiple
  of 8. Keys in this order: ``__metadata__`` (string -> string, keys sorted), then the tensors in data order;
- the data: ``seq_offsets`` I64 [N_seq+1], ``advantages`` F32 [N_seq], ``old_logprobs`` F32 [T],
  ``token_ids`` I32 [T], ``loss_mask`` U8 [T], contiguous.

Metadata: ``protocol`` = ``rstar.grpo-batch/2``, ``runId``, ``step``, ``policyVersion``, ``sequences``,
``tokens`` (model tokens), and JSON arrays ``rolloutIds``, ``groupIds``, ``rewards``, ``promptLengths``;
``sourceBatchHash`` = the libs/grpo ``buildTrainingBatch`` hash of the same sequences.

The batch hash of a v2 batch is the sha256 hex of the whole file.
"""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
from safetensors.numpy import load as st_load

from ..errors import BatchFormatError
from .js_json import js_stringify
from .model import PROTOCOL_V2, TrainingBatch

TENSORS = (
    ("seq_offsets", "I64", np.dtype("<i8")),
    ("advantages", "F32", np.dtype("<f4")),
    ("old_logprobs", "F32", np.dtype("<f4")),
    ("token_ids", "I32", np.dtype("<i4")),
    ("loss_mask", "U8", np.dtype("u1")),
)


def is_safetensors(data: bytes) -> bool:
    """True when ``data`` starts like a safetensors file (a plausible header length, then ``{``)."""
    if len(data) < 10:
        return False
    (n,) = struct.unpack("<Q", data[:8])
    return 2 <= n <= len(data) - 8 and data[8:9] == b"{"


def read_v2(data: bytes, uri: str) -> TrainingBatch:
    """Parse a v2 batch; the hash is sha256 of ``data``. Raises :class:`BatchFormatError`."""
    (n,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
        tensors = st_load(data)
    except Exception as e:  # the safetensors library raises its own error types
        raise BatchFormatError(f"batch {uri} is not a valid safetensors file ({e})", "batchUri") from e
    meta = header.get("__metadata__") or {}
    if meta.get("protocol") != PROTOCOL_V2:
        raise BatchFormatError(f"batch {uri}: __metadata__.protocol is {meta.get('protocol')!r}, expected {PROTOCOL_V2!r}", "protocol")
    arrays = {}
    for name, dt, _np in TENSORS:
        if name not in tensors:
            raise BatchFormatError(f"batch {uri} lacks tensor {name} ({dt})", name)
        if header[name]["dtype"] != dt or tensors[name].ndim != 1:
            raise BatchFormatError(f"batch {uri}: tensor {name} must be a 1-D {dt}, got {header[name]['dtype']} {header[name]['shape']}", name)
        arrays[name] = tensors[name]

    def meta_json(key: str, default):
        raw = meta.get(key)
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            raise BatchFormatError(f"batch {uri}: __metadata__.{key} is not JSON", key) from e

    def meta_int(key: str):
        raw = meta.get(key)
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError as e:
            raise BatchFormatError(f"batch {uri}: __metadata__.{key} = {raw!r} is not an integer", key) from e

    batch = TrainingBatch(
        protocol=PROTOCOL_V2,
        token_ids=arrays["token_ids"].astype(np.int64),
        loss_mask=arrays["loss_mask"].astype(np.uint8),
        old_logprobs=arrays["old_logprobs"].astype(np.float64),
        seq_offsets=arrays["seq_offsets"].astype(np.int64),
        advantages=arrays["advantages"].astype(np.float64),
        batch_hash=hashlib.sha256(data).hexdigest(),
        rollout_ids=meta_json("rolloutIds", []),
        run_id=meta.get("runId"),
        step=meta_int("step"),
        policy_version=meta_int("policyVersion"),
        meta=dict(meta),
    )
    batch.validate(uri)
    count = meta_int("sequences")
    if count is not None and count != batch.num_sequences:
        raise BatchFormatError(f"batch {uri}: __metadata__.sequences says {count}, the tensors hold {batch.num_sequences}", "sequences")
    tokens = meta_int("tokens")
    if tokens is not None and tokens != batch.num_tokens:
        raise BatchFormatError(f"batch {uri}: __metadata__.tokens says {tokens}, loss_mask counts {batch.num_tokens}", "tokens")
    return batch


def write_v2(
    sequences: list[dict],
    *,
    run_id: str,
    step: int,
    policy_version: int,
    source_batch_hash: str = "",
) -> bytes:
    """Serialise sequences (dicts with rolloutId, groupId, tokenIds, lossMask, oldLogprobs, advantage,
    reward, promptLength, as libs/grpo's ``TrainingSequence``) to v2 bytes, byte-identical to the
    TypeScript writer. Used by tests and the benchmark; production batches are written by TypeScript."""
    lens = [len(s["tokenIds"]) for s in sequences]
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype("<i8")
    flat = lambda k, dt: np.asarray([x for s in sequences for x in s[k]], dtype=dt)  # noqa: E731
    data = {
        "seq_offsets": offsets,
        "advantages": np.asarray([s["advantage"] for s in sequences], dtype="<f4"),
        "old_logprobs": flat("oldLogprobs", "<f4"),
        "token_ids": flat("tokenIds", "<i4"),
        "loss_mask": flat("lossMask", "u1"),
    }
    meta = {
        "groupIds": js_stringify([s.get("groupId", "") for s in sequences]),
        "policyVersion": str(policy_version),
        "promptLengths": js_stringify([s.get("promptLength", 0) for s in sequences]),
        "protocol": PROTOCOL_V2,
        "rewards": js_stringify([s.get("reward", 0) for s in sequences]),
        "rolloutIds": js_stringify([s["rolloutId"] for s in sequences]),
        "runId": run_id,
        "sequences": str(len(sequences)),
        "sourceBatchHash": source_batch_hash,
        "step": str(step),
        "tokens": str(int(data["loss_mask"].sum())),
    }
    return encode_safetensors(meta, [(name, dt, data[name].astype(npdt)) for name, dt, npdt in TENSORS])


def encode_safetensors(meta: dict[str, str], tensors: list[tuple[str, str, np.ndarray]]) -> bytes:
    """The deterministic safetensors encoding used by both v2 writers (see the module doc)."""
    header: dict = {"__metadata__": {k: meta[k] for k in sorted(meta)}}
    off = 0
    for name, dt, arr in tensors:
        header[name] = {"dtype": dt, "shape": [int(arr.shape[0])], "data_offsets": [off, off + arr.nbytes]}
        off += arr.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(arr.tobytes() for _, _, arr in tensors)
