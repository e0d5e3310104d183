"""Batch format v1: one JSON document, or JSON Lines (a header line, then one sequence per line).

Layout: services/optimization/README.md ("External trainer batch protocol (v1)"). The hash is the one
libs/grpo ``buildTrainingBatch`` computes: sha256 hex of
``JSON.stringify(sequences.map(s => [s.rolloutId, s.tokenIds, s.lossMask, s.oldLogprobs, s.advantage]))``.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from ..errors import BatchFormatError
from .js_json import js_stringify
from .model import PROTOCOL_V1, TrainingBatch

_SEQ_FIELDS = ("rolloutId", "tokenIds", "lossMask", "oldLogprobs", "advantage")


def canonical_hash_v1(sequences: list[dict]) -> str:
    """sha256 hex of the canonical JSON of the sequences, byte-identical to libs/grpo's hash."""
    h = hashlib.sha256()
    h.update(b"[")
    for i, s in enumerate(sequences):
        if i:
            h.update(b",")
        h.update(js_stringify([s[k] for k in _SEQ_FIELDS]).encode("utf-8"))
    h.update(b"]")
    return h.hexdigest()


def _parse(text: str, uri: str) -> tuple[dict, list[dict]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict):
        seqs = doc.get("sequences")
        if not isinstance(seqs, list):
            raise BatchFormatError(f"batch {uri}: a single-document v1 batch needs a 'sequences' list", "sequences")
        return doc, seqs
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise BatchFormatError(f"batch {uri} is empty", "batchUri")
    out = []
    for no, ln in enumerate(lines):
        try:
            out.append(json.loads(ln))
        except json.JSONDecodeError as e:
            raise BatchFormatError(f"batch {uri} line {no + 1} is not JSON ({e.msg}); v1 is one JSON document or JSON Lines", "batchUri") from e
    header, seqs = out[0], out[1:]
    if not isinstance(header, dict) or "sequences" in header and header["sequences"]:
        raise BatchFormatError(f"batch {uri}: the first JSON Lines line must be the header (no sequences)", "batchUri")
    return header, seqs


def read_v1(data: bytes, uri: str) -> TrainingBatch:
    """Parse a v1 batch (JSON or JSON Lines) and compute its canonical hash.
    Raises :class:`BatchFormatError` naming the sequence and field that is wrong."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BatchFormatError(f"batch {uri} is not UTF-8 text", "batchUri") from e
    header, seqs = _parse(text, uri)
    proto = header.get("protocol", PROTOCOL_V1)
    if proto != PROTOCOL_V1:
        raise BatchFormatError(f"batch {uri}: protocol {proto!r} is not {PROTOCOL_V1!r}", "protocol")
    ids, masks, lps, offs, advs, rids = [], [], [], [0], [], []
    for i, s in enumerate(seqs):
        if not isinstance(s, dict):
            raise BatchFormatError(f"batch {uri}: sequence {i} is not an object", f"sequences.{i}")
        for k in _SEQ_FIELDS:
            if k not in s:
                raise BatchFormatError(f"batch {uri}: sequence {i} lacks {k}", f"sequences.{i}.{k}")
        t, m, lp = s["tokenIds"], s["lossMask"], s["oldLogprobs"]
        if not (isinstance(t, list) and isinstance(m, list) and isinstance(lp, list)) or not (len(t) == len(m) == len(lp)):
            raise BatchFormatError(
                f"batch {uri}: sequence {i} needs tokenIds, lossMask and oldLogprobs as lists of the same length", f"sequences.{i}.lossMask"
            )
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
            raise BatchFormatError(f"batch {uri}: sequence {i} tokenIds must be integers", f"sequences.{i}.tokenIds")
        if not isinstance(s["advantage"], (int, float)) or isinstance(s["advantage"], bool):
            raise BatchFormatError(f"batch {uri}: sequence {i} advantage must be a number", f"sequences.{i}.advantage")
        if not isinstance(s["rolloutId"], str):
            raise BatchFormatError(f"batch {uri}: sequence {i} rolloutId must be a string", f"sequences.{i}.rolloutId")
        ids.extend(t)
        masks.extend(m)
        lps.extend(lp)
        offs.append(offs[-1] + len(t))
        advs.append(s["advantage"])
        rids.append(s["rolloutId"])
    try:
        batch = TrainingBatch(
            protocol=PROTOCOL_V1,
            token_ids=np.asarray(ids, dtype=np.int64),
            loss_mask=np.asarray(masks, dtype=np.uint8) if all(x in (0, 1) for x in masks) else np.asarray(masks, dtype=np.int64),
            old_logprobs=np.asarray(lps, dtype=np.float64),
            seq_offsets=np.asarray(offs, dtype=np.int64),
            advantages=np.asarray(advs, dtype=np.float64),
            batch_hash=canonical_hash_v1(seqs),
            rollout_ids=rids,
            run_id=header.get("runId"),
            step=header.get("step"),
            policy_version=header.get("policyVersion"),
            meta={k: v for k, v in header.items() if k != "sequences"},
        )
    except (TypeError, ValueError) as e:
        raise BatchFormatError(f"batch {uri}: non-numeric values in a sequence ({e})", "sequences") from e
    batch.validate(uri)
    return batch
