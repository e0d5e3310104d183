"""Sharded checkpoints of a run: when to write them, where they live, how a restart gets back.

A step request may carry ``checkpoints: {every, keepLast?, exportEvery?, final?}`` (:class:`CheckpointPolicy`).
With it the worker writes, for policy version ``v`` produced by the run's ``k``-th trained step:

- ``runs/<run>/model/v<v>/`` and ``runs/<run>/optimizer/v<v>/``: the fp32 master weights and the AdamW
  state as ``torch.distributed.checkpoint`` (DCP) directories, one ``.distcp`` file per rank plus
  ``.metadata`` (any world size reads them) — only when ``k % every == 0`` or the step is ``final``;
- the Hugging Face export (safetensors in the base model's dtype, tokenizer files, ``manifest.json``,
  ``STABLE``) of every step, because engines on the disk weight-sync path reload it;
- after the version is committed, :func:`prune` keeps the ``keepLast`` newest sharded versions (model and
  optimizer alike) and the ``keepLast`` newest HF exports, plus every *milestone* export (``k %
  exportEvery == 0``) and the ``final`` one.

Without ``checkpoints`` the older layout stays: the AdamW state of every version, the HF export of every
version, nothing pruned (a restart reloads the HF export and that optimizer state).

A restart that must continue from a version ``v`` without a sharded checkpoint of its own (versions
between two checkpoints) loads the newest sharded checkpoint ``c < v`` (or the base model) and *replays*
the committed steps ``c .. v-1`` with their stored batches, loss and optimizer settings. Training on the
same inputs from the same fp32 state is deterministic on one device type and world size, and each
replayed version is checked against the digest of its weights recorded when it was first trained
(:func:`weights_digest`); a difference fails the step with :class:`ReplayDivergedError` rather than
continuing from other weights.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass

import torch

from .distributed import DistContext
from .errors import RequestError, RstarWorkerError


class ReplayDivergedError(RstarWorkerError):
    """Replaying the steps since the last sharded checkpoint gave other weights than the first time."""

    code = "replay_diverged"
    status = 500


class CheckpointMissingError(RstarWorkerError):
    """No sharded checkpoint, export or base model to continue a run's policy version from."""

    code = "checkpoint_missing"
    status = 409


@dataclass(frozen=True)
class CheckpointPolicy:
    """How often a run writes sharded checkpoints and what it keeps.

    - ``every``: trained steps between sharded (model + optimizer) checkpoints (>= 1);
    - ``keep_last``: sharded checkpoints, and per-step HF exports, kept (None = all);
    - ``export_every``: trained steps between milestone HF exports that are never pruned (None = none);
    - ``final``: this step ends the run: it writes a sharded checkpoint and a kept export.
    """

    every: int = 1
    keep_last: int | None = None
    export_every: int | None = None
    final: bool = False

    @staticmethod
    def parse(obj) -> "CheckpointPolicy | None":
        """``None`` for an absent field (the older layout); :class:`RequestError` naming the field otherwise."""
        if obj is None:
            return None
        if not isinstance(obj, dict):
            raise RequestError("checkpoints must be an object {every, keepLast?, exportEvery?, final?}", "checkpoints")
        unknown = sorted(set(obj) - {"every", "keepLast", "exportEvery", "final"})
        if unknown:
            raise RequestError(f"checkpoints has unknown keys {unknown}; accepted: every, keepLast, exportEvery, final", f"checkpoints.{unknown[0]}")

        def count(key: str, default):
            v = obj.get(key, default)
            if v is None and default is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise RequestError(f"checkpoints.{key} must be an integer >= 1, got {v!r}", f"checkpoints.{key}")
            return v

        final = obj.get("final", False)
        if not isinstance(final, bool):
            raise RequestError(f"checkpoints.final must be true or false, got {final!r}", "checkpoints.final")
        return CheckpointPolicy(every=count("every", 1), keep_last=count("keepLast", None), export_every=count("exportEvery", None), final=final)

    def to_json(self) -> dict:
        return {"every": self.every, "keepLast": self.keep_last, "exportEvery": self.export_every, "final": self.final}

    def sharded_at(self, trained: int) -> bool:
        """Whether the run's ``trained``-th step (1-based count after it) writes a sharded checkpoint."""
        return self.final or trained % self.every == 0

    def milestone_at(self, trained: int) -> bool:
        """Whether the export after ``trained`` steps is kept for good."""
        return self.final or (self.export_every is not None and trained % self.export_every == 0)


def model_dir(run_dir: str, version: int) -> str:
    return os.path.join(run_dir, "model", f"v{version}")


def optimizer_dir(run_dir: str, version: int) -> str:
    return os.path.join(run_dir, "optimizer", f"v{version}")


def dcp_complete(path: str | None) -> bool:
    """A DCP directory is complete once renamed into place with its ``.metadata`` (written last by DCP)."""
    return bool(path) and os.path.isfile(os.path.join(path, ".metadata"))


def _dcp_save(state: dict, path: str, ctx: DistContext, tag: str) -> None:
    """Write ``state`` as a DCP directory at ``path`` via ``path + '.tmp'`` (renamed by rank 0 after every
    rank has written). Collective."""
    import torch.distributed.checkpoint as dcp

    tmp = path.rstrip("/") + ".tmp"
    if ctx.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.dirname(tmp) or ".", exist_ok=True)
    ctx.broadcast(f"{tag}-save")  # nobody writes into tmp before it was cleared
    dcp.save(state, checkpoint_id=tmp, process_group=ctx.control if ctx.is_dist else None, no_dist=not ctx.is_dist)
    ctx.broadcast(f"{tag}-written")
    if ctx.is_main:
        shutil.rmtree(path, ignore_errors=True)
        os.replace(tmp, path)
    ctx.broadcast(f"{tag}-saved")


def save_sharded(model: torch.nn.Module, optim: torch.optim.Optimizer, model_path: str, optim_path: str, ctx: DistContext) -> None:
    """Write the fp32 master weights and the AdamW state, each rank its own shard (never gathered).
    Collective."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    from .optim_state import save_optimizer

    _dcp_save({"model": get_model_state_dict(model)}, model_path, ctx, "model")
    save_optimizer(model, optim, optim_path, ctx)


def load_sharded_model(model: torch.nn.Module, path: str, ctx: DistContext) -> None:
    """Read the weights saved by :func:`save_sharded` (any world size) into ``model``, already built and
    sharded like the running job. Collective."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    state = {"model": get_model_state_dict(model)}
    dcp.load(state, checkpoint_id=path, process_group=ctx.control if ctx.is_dist else None, no_dist=not ctx.is_dist)
    set_model_state_dict(model, state["model"])


def weights_digest(sd: dict[str, torch.Tensor]) -> str:
    """sha256 hex over ``name\\0dtype\\0shape\\0bytes`` of every tensor of a gathered state dict, names
    sorted: equal digests mean bit-identical weights."""
    h = hashlib.sha256()
    for name in sorted(sd):
        t = sd[name].detach().contiguous().cpu()
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def plan_restore(run_dir: str, version: int, versions: dict[int, dict], steps: dict[int, dict], base_dir: str) -> dict:
    """The ``load`` command that brings the in-memory model to ``version`` of a run: ``{weights, optimizer,
    model?, replay?}``. ``weights`` is a HF directory to build the model from; ``model`` / ``optimizer`` DCP
    directories read over it; ``replay`` the committed steps to train again, oldest first, each with the
    ``digest`` its weights must have afterwards. :class:`CheckpointMissingError` when nothing on disk leads
    to ``version``."""
    ver = versions.get(version)
    if ver is None:
        raise CheckpointMissingError(f"run has no record of policy version {version} (have {sorted(versions)})", "policyVersion")
    if ver.get("base"):
        return {"weights": ver["checkpointDir"], "optimizer": None}
    if not ver.get("sharded"):
        # The older layout: every version has its HF export and AdamW state.
        return {"weights": ver["checkpointDir"], "optimizer": ver.get("optimizer")}
    if dcp_complete(ver.get("model")) and dcp_complete(ver.get("optimizer")):
        return {"weights": base_dir, "model": ver["model"], "optimizer": ver["optimizer"]}
    # Between checkpoints: the newest earlier version with a sharded checkpoint (or the base), then replay.
    by_version = {st["request"]["policyVersion"]: st for st in steps.values() if st["result"] is not None}
    replay = []
    v = version
    while True:
        prev = v - 1
        st = by_version.get(prev)
        if st is None or versions.get(v) is None:
            raise CheckpointMissingError(
                f"policy version {version} cannot be rebuilt: no sharded checkpoint at or below it and no committed step from version {prev}; "
                "start a new runId from the last exported checkpoint (initFrom)",
                "policyVersion",
            )
        req = st["request"]
        replay.append({
            "step": st["result"]["step"], "batchUri": req["batchUri"], "batchHash": req["batchHash"], "loss": req["loss"],
            "optimizer": req["optimizer"], "mode": req["mode"], "trainedSteps": versions[prev].get("trainedSteps", 0),
            "policyVersion": v, "digest": versions[v].get("weightsDigest"),
        })
        p = versions.get(prev)
        if p is None:
            raise CheckpointMissingError(f"policy version {version} cannot be rebuilt: run has no record of version {prev}", "policyVersion")
        if p.get("base"):
            start = {"weights": p["checkpointDir"], "optimizer": None}
            break
        if dcp_complete(p.get("model")) and dcp_complete(p.get("optimizer")):
            start = {"weights": base_dir, "model": p["model"], "optimizer": p["optimizer"]}
            break
        if not p.get("sharded"):
            start = {"weights": p["checkpointDir"], "optimizer": p.get("optimizer")}
            break
        v = prev
    replay.reverse()
    return {**start, "replay": replay}


def prune(versions: dict[int, dict], policy: CheckpointPolicy, protected: set[str]) -> list[str]:
    """Remove what ``policy`` no longer keeps of a run's ``versions`` (their ``versions/<v>.json`` records):
    sharded model + optimizer directories beyond the ``keepLast`` newest complete ones, and HF exports
    beyond the ``keepLast`` newest that are neither milestones nor final. Directories in ``protected``
    (the base model, ``initFrom``) are never touched. Returns the paths removed."""
    if policy.keep_last is None:
        return []
    removed: list[str] = []
    sharded = sorted(v for v, d in versions.items() if d.get("sharded") and dcp_complete(d.get("model")) and dcp_complete(d.get("optimizer")))
    for v in sharded[: max(0, len(sharded) - policy.keep_last)]:
        for key in ("model", "optimizer"):
            p = versions[v][key]
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    exports = sorted(v for v, d in versions.items() if d.get("sharded") and not d.get("base") and not d.get("milestone"))
    for v in exports[: max(0, len(exports) - policy.keep_last)]:
        p = versions[v]["checkpointDir"]
        if os.path.abspath(p) in protected or not os.path.isdir(p):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def restore(ctx: DistContext, trainer, load: dict) -> None:
    """Execute a :func:`plan_restore` command on this rank: build the model from ``weights``, read the
    sharded ``model`` / ``optimizer`` over it, then train the ``replay`` steps again, checking each
    version's weights digest. Collective. Raises :class:`ReplayDivergedError` (rank 0) on a digest that
    differs, the batch errors of :func:`.batch.load_batch` for a batch file no longer readable."""
    from .batch import load_batch
    from .config import LossConfig, OptimizerConfig
    from .optim_state import load_optimizer

    sharded = load.get("model")
    trainer.load(load["weights"], None if sharded else load.get("optimizer"))
    if sharded:
        load_sharded_model(trainer.model, sharded, ctx)
        load_optimizer(trainer.model, trainer.optim, load["optimizer"], ctx)
    # Read every batch first, so a missing file fails before any rank trains.
    batches = [load_batch(r["batchUri"], r["batchHash"]) for r in load.get("replay", [])]
    for r, batch in zip(load.get("replay", []), batches):
        trainer.train_step(batch, LossConfig.parse(r["loss"]), OptimizerConfig.parse(r["optimizer"]), r["mode"], r["trainedSteps"])
        sd = trainer._gathered_weights()
        if ctx.is_main and r.get("digest"):
            got = weights_digest(sd)
            if got != r["digest"]:
                raise ReplayDivergedError(
                    f"replaying step {r['step']} (to policy version {r['policyVersion']}) gave weights with digest {got}, "
                    f"but that version was trained to {r['digest']}; the inputs or the device/world size changed since. "
                    "Resume on the same world size and device type, or continue from an exported checkpoint with a new runId",
                    "policyVersion",
                )
        del sd
