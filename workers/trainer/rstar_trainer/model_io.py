"""Model directories and checkpoints: validation, the tokenizer hash, manifests, the STABLE marker.

A checkpoint is a Hugging Face directory (``config.json``, ``*.safetensors``, tokenizer files copied
byte for byte from the base model) plus ``manifest.json`` (sha256 and size of every other file) and an
empty ``STABLE`` file written last. The checkpoint hash is the sha256 of ``manifest.json``'s bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

from .errors import CheckpointIntegrityError, ModelDirError, TokenizerMissingError

MANIFEST = "manifest.json"
STABLE = "STABLE"
MANIFEST_FORMAT = "rstar.checkpoint-manifest/1"
# Files that define the tokenizer; the tokenizer hash covers those present, in this order.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json", "tokenizer.model")
TOKENIZER_HASH_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def sha256_file(path: str, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def validate_model_dir(path: str, *, need_tokenizer: bool = True) -> None:
    """Refuse a model directory that is missing, lacks ``config.json`` or weights, or has no tokenizer
    (:class:`ModelDirError`, :class:`TokenizerMissingError`)."""
    if not path or not os.path.isdir(path):
        raise ModelDirError(f"model directory {path!r} does not exist; pass --model DIR with a Hugging Face model directory (make one with `python -m rstar_trainer make-tiny --out DIR`)", "model")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise ModelDirError(f"model directory {path!r} has no config.json; it must be a Hugging Face model directory", "model")
    names = os.listdir(path)
    if not any(n.endswith(".safetensors") or n.endswith(".bin") for n in names):
        raise ModelDirError(f"model directory {path!r} has no weights (*.safetensors)", "model")
    if need_tokenizer and not (os.path.isfile(os.path.join(path, "tokenizer.json")) or os.path.isfile(os.path.join(path, "tokenizer.model"))):
        raise TokenizerMissingError(
            f"model directory {path!r} has no tokenizer (tokenizer.json); engines and the trainer must share the model's own tokenizer — copy the tokenizer files into it",
            "model",
        )


def tokenizer_hash(path: str) -> str:
    """sha256 hex over the lines ``<name>\\0<sha256 of the file>\\n`` for each of ``tokenizer.json``,
    ``tokenizer_config.json``, ``chat_template.jinja`` present in ``path`` (in that order). Engine and
    trainer must report the same value; TypeScript computes it the same way from the same files."""
    h = hashlib.sha256()
    for name in TOKENIZER_HASH_FILES:
        p = os.path.join(path, name)
        if os.path.isfile(p):
            h.update(f"{name}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def copy_tokenizer_files(src: str, dst: str) -> None:
    """Copy the tokenizer files byte for byte (re-saving could change them and so the tokenizer hash)."""
    for name in TOKENIZER_FILES:
        p = os.path.join(src, name)
        if os.path.isfile(p):
            shutil.copyfile(p, os.path.join(dst, name))


def write_manifest(path: str, meta: dict) -> str:
    """Write ``manifest.json`` listing every file under ``path`` (sha256, bytes; keys sorted, no
    timestamps, so the same weights give the same manifest) and return the sha256 of its bytes."""
    files = {}
    for root, _dirs, fnames in os.walk(path):
        for fn in fnames:
            full = os.path.join(root, fn)
            rel = os.path.relpath(full, path)
            if rel in (MANIFEST, STABLE):
                continue
            files[rel] = {"sha256": sha256_file(full), "bytes": os.path.getsize(full)}
    doc = {"format": MANIFEST_FORMAT, **meta, "files": {k: files[k] for k in sorted(files)}}
    data = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    with open(os.path.join(path, MANIFEST), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return hashlib.sha256(data).hexdigest()


def mark_stable(path: str) -> None:
    """Write the ``STABLE`` marker last, after everything else is on disk."""
    fsync_tree(path)
    with open(os.path.join(path, STABLE), "wb") as f:
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(path)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: str) -> None:
    for root, _dirs, fnames in os.walk(path):
        for fn in fnames:
            fd = os.open(os.path.join(root, fn), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(root)


def verify_checkpoint(path: str, *, files: tuple[str, ...] | None = None) -> tuple[str, dict]:
    """Check ``STABLE`` and ``manifest.json``, and the sha256 of the listed files (all by default,
    or those of ``files`` that the manifest lists). Returns (manifest hash, manifest).
    Raises :class:`CheckpointIntegrityError` naming the first bad file."""
    if not os.path.isfile(os.path.join(path, STABLE)):
        raise CheckpointIntegrityError(f"checkpoint {path!r} has no STABLE marker: it was not completely written", "model_path")
    mp = os.path.join(path, MANIFEST)
    if not os.path.isfile(mp):
        raise CheckpointIntegrityError(f"checkpoint {path!r} has no manifest.json", "model_path")
    with open(mp, "rb") as f:
        data = f.read()
    manifest = json.loads(data)
    listed = manifest.get("files", {})
    names = listed.keys() if files is None else [n for n in listed if n in files or any(n.endswith(s) for s in files if s.startswith("."))]
    for name in names:
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            raise CheckpointIntegrityError(f"checkpoint {path!r}: {name} is listed in manifest.json but missing", "model_path")
        got = sha256_file(full)
        if got != listed[name]["sha256"]:
            raise CheckpointIntegrityError(f"checkpoint {path!r}: {name} has sha256 {got}, manifest.json says {listed[name]['sha256']}", "model_path")
    return hashlib.sha256(data).hexdigest(), manifest


def manifest_hash(path: str) -> str | None:
    """sha256 of ``manifest.json`` when present (a base model may have none)."""
    mp = os.path.join(path, MANIFEST)
    if not os.path.isfile(mp):
        return None
    return sha256_file(mp)
