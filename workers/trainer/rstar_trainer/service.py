"""Steps of runs: accept, train once, persist, answer — across restarts.

State on disk (``--state-dir``), written atomically (temp file + rename + fsync):

- ``runs/<runId>/steps/<step>/request.json``: the accepted request and its ``attempts``;
- ``runs/<runId>/steps/<step>/result.json``: the ``rstar.grpo-result/1`` result, written last;
- ``runs/<runId>/steps/<step>/error.json``: a failed attempt's named error (a new PUT may retry);
- ``runs/<runId>/versions/<v>.json``: where policy version ``v`` lives (checkpoint dir, optimizer file,
  trained steps); the run's first version points at the base model;
- ``runs/<runId>/optimizer/v<v>/``: AdamW state after version ``v`` (sharded DCP directory, one file per
  rank; any world size resumes it); with a request's ``checkpoints`` policy also ``runs/<runId>/model/v<v>/``
  (fp32 master weights, DCP), only every ``checkpoints.every`` steps, pruned to ``keepLast``
  (:mod:`.checkpoints`, which also says how a restart between two checkpoints replays the steps since).

Checkpoints go to ``--checkpoint-root/<runId>/v<version>`` unless the request names ``checkpointDir``.
A step is accepted (202) only after ``request.json`` is on disk; on start the worker re-runs every
accepted step without a result, from the checkpoint of its ``policyVersion`` — so a step interrupted by
a crash is trained exactly once more and its weights equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import traceback

from .batch import load_batch
from .checkpoints import CheckpointPolicy, model_dir, optimizer_dir, plan_restore, prune, restore, save_sharded
from .config import LossConfig, OptimizerConfig
from .distributed import DistContext
from .errors import (
    BatchFormatError,
    NotFoundError,
    PolicyVersionError,
    RequestError,
    RstarWorkerError,
    StepConflictError,
)
from .model_io import tokenizer_hash, validate_model_dir
from .policy import PolicyTrainer
from . import weight_sync

RESULT_PROTOCOL = "rstar.grpo-result/1"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$")
_HASH = re.compile(r"^[0-9a-f]{64}$")
HOLD_ENV = "RSTAR_TRAINER_FAULT_HOLD_DIR"


def write_json_atomic(path: str, doc: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def execute_step(ctx: DistContext, trainer: PolicyTrainer, cmd: dict) -> dict:
    """Run one step command on this rank (all ranks call it with the same ``cmd``): load the policy
    version when asked, read and check the batch, train, save. Returns metrics (+ ``manifestHash`` on
    rank 0). Errors found before training are agreed on by all ranks, so none is left waiting."""
    err = None
    batch = None
    try:
        if cmd.get("load"):
            restore(ctx, trainer, cmd["load"])
        batch = load_batch(cmd["batchUri"], cmd["batchHash"])
        trainer.check_vocab(batch)
    except RstarWorkerError as e:
        err = e
    errs = ctx.gather_errors(None if err is None else json.dumps(err.to_json()))
    if err is not None:
        raise err
    if errs:
        first = json.loads(errs[0].split(": ", 1)[1])
        raise RstarWorkerError(first["message"], first.get("field"), code=first["code"], status=422)
    metrics = trainer.train_step(batch, LossConfig.parse(cmd["loss"]), OptimizerConfig.parse(cmd["optimizer"]), cmd["mode"], cmd["trainedSteps"])
    hold = os.environ.get(HOLD_ENV)
    if hold and ctx.is_main:
        # Fault injection for the crash tests: the update is applied in memory but nothing is
        # committed; the test kills the process here.
        tag = f"{cmd['runId']}-{cmd['step']}"
        open(os.path.join(hold, f"held-{tag}"), "w").close()
        while not os.path.exists(os.path.join(hold, f"release-{tag}")):
            time.sleep(0.05)
    save = cmd["save"]
    if save.get("sharded"):
        save_sharded(trainer.model, trainer.optim, save["sharded"]["model"], save["sharded"]["optimizer"], ctx)
    metrics["manifestHash"] = trainer.save(save["dir"], save["optimizer"], save["meta"])
    metrics["weightsDigest"] = trainer.last_weights_digest
    return metrics


def follower_loop(ctx: DistContext, trainer: PolicyTrainer) -> None:
    """Ranks > 0: execute rank 0's commands until it sends ``exit``."""
    while True:
        cmd = ctx.broadcast(None)
        if cmd is None or cmd.get("op") == "exit":
            return
        try:
            if cmd.get("op") in weight_sync.OPS:
                weight_sync.follow(ctx, trainer, cmd)
                continue
            execute_step(ctx, trainer, cmd)
        except RstarWorkerError:
            pass  # rank 0 reports it
        except Exception:  # noqa: BLE001 - keep serving; rank 0 sees the failure through the collectives
            traceback.print_exc()


class StepService:
    """Rank 0's bookkeeping of runs and steps plus the single training thread."""

    def __init__(self, ctx: DistContext, trainer: PolicyTrainer, *, base_dir: str, state_dir: str, checkpoint_root: str, dtype_name: str):
        self.ctx = ctx
        self.trainer = trainer
        self.base_dir = base_dir
        self.state_dir = os.path.abspath(state_dir)
        self.checkpoint_root = os.path.abspath(checkpoint_root)
        self.dtype_name = dtype_name
        self.tokenizer_hash = tokenizer_hash(base_dir)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        # Held while the model's collectives run (a step, a weight-sync bucket, a probe): never interleaved.
        self.collectives = threading.Lock()
        self.queue: list[tuple[str, int]] = []
        self.running: tuple[str, int] | None = None
        # What the in-memory weights are: (runId, policyVersion); ("", -1) = the pristine base model.
        self.loaded: tuple[str, int] | None = ("", -1)
        self.stopping = False
        # Counters since start, for GET /metrics.
        self.counters = {"steps_done": 0, "steps_failed": 0, "trained_tokens": 0, "train_seconds": 0.0}
        self.last_step: dict = {}
        self.thread = threading.Thread(target=self._loop, name="trainer-steps", daemon=True)

    # ------------------------------------------------------------- paths

    def _run_dir(self, run: str) -> str:
        return os.path.join(self.state_dir, "runs", run)

    def _step_dir(self, run: str, step: int) -> str:
        return os.path.join(self._run_dir(run), "steps", f"{step:010d}")

    def _versions(self, run: str) -> dict[int, dict]:
        d = os.path.join(self._run_dir(run), "versions")
        out = {}
        if os.path.isdir(d):
            for fn in os.listdir(d):
                if fn.endswith(".json"):
                    doc = read_json(os.path.join(d, fn))
                    if doc is not None:
                        out[int(fn[:-5])] = doc
        return out

    def _steps(self, run: str) -> dict[int, dict]:
        d = os.path.join(self._run_dir(run), "steps")
        out = {}
        if os.path.isdir(d):
            for fn in sorted(os.listdir(d)):
                sd = os.path.join(d, fn)
                req = read_json(os.path.join(sd, "request.json"))
                if req is None:
                    continue
                res = read_json(os.path.join(sd, "result.json"))
                err = read_json(os.path.join(sd, "error.json"))
                out[int(fn)] = {"request": req, "result": res, "error": err}
        return out

    # ------------------------------------------------------------ start

    def start(self) -> None:
        """Queue every accepted step that has neither a result nor an error, oldest first, then start
        the training thread."""
        runs = os.path.join(self.state_dir, "runs")
        pending = []
        if os.path.isdir(runs):
            for run in sorted(os.listdir(runs)):
                for step, st in self._steps(run).items():
                    if st["result"] is None and st["error"] is None:
                        pending.append((st["request"].get("acceptedAt", 0), run, step))
        for _t, run, step in sorted(pending):
            self.queue.append((run, step))
        self.thread.start()

    def stop(self) -> None:
        with self.cv:
            self.stopping = True
            self.cv.notify_all()

    @property
    def busy(self) -> bool:
        return self.running is not None or bool(self.queue)

    # ------------------------------------------------------------- API

    @staticmethod
    def check_ids(run: str, step: str) -> int:
        if not _RUN_ID.match(run) or run in (".", ".."):
            raise RequestError(f"runId {run!r} must be 1-200 characters of letters, digits and ._:@+- (starting with a letter or digit)", "runId")
        if not step.isdigit() or len(step) > 9:
            raise RequestError(f"step {step!r} must be a non-negative integer", "step")
        return int(step)

    def put(self, run: str, step: int, body) -> tuple[int, dict]:
        """Accept a step (202), or answer a repeat (200 with the result / 202 while pending), or refuse
        (409 on another batch or a policy version the run is not at; 400/422 on bad input)."""
        if not isinstance(body, dict):
            raise RequestError("the body must be a JSON object {batchUri, batchHash, loss, optimizer, policyVersion}", "body")
        uri, digest, pv = body.get("batchUri"), body.get("batchHash"), body.get("policyVersion")
        if not isinstance(uri, str) or not uri:
            raise RequestError("batchUri must name the batch file (a path or file:// URI the worker can read)", "batchUri")
        if not isinstance(digest, str) or not _HASH.match(digest):
            raise RequestError("batchHash must be 64 lowercase hex characters (sha256)", "batchHash")
        if isinstance(pv, bool) or not isinstance(pv, int) or pv < 0:
            raise RequestError(f"policyVersion must be a non-negative integer, got {pv!r}", "policyVersion")
        mode = body.get("mode", "grpo")
        if mode not in ("grpo", "sft"):
            raise RequestError(f"mode must be 'grpo' or 'sft', got {mode!r}", "mode")
        loss = LossConfig.parse(body.get("loss"))
        opt = OptimizerConfig.parse(body.get("optimizer"))
        checkpoints = CheckpointPolicy.parse(body.get("checkpoints"))
        ckpt = body.get("checkpointDir")
        if ckpt is not None and (not isinstance(ckpt, str) or not os.path.isabs(ckpt)):
            raise RequestError("checkpointDir must be an absolute directory path", "checkpointDir")
        init_from = body.get("initFrom")
        if init_from is not None:
            if not isinstance(init_from, str):
                raise RequestError("initFrom must be a model directory path", "initFrom")
            validate_model_dir(init_from, need_tokenizer=False)

        with self.lock:
            steps = self._steps(run)
            cur = steps.get(step)
            if cur is not None and cur["error"] is None:
                stored = cur["request"]["batchHash"]
                if stored != digest:
                    raise StepConflictError(run, step, stored, digest)
                if cur["result"] is not None:
                    return 200, cur["result"]
                return 202, self._pending_view(run, step, cur["request"])
            # Read the batch now: a hash mismatch or a malformed file is refused before anything is stored.
            batch = load_batch(uri, digest)
            for key, want in (("runId", run), ("step", step), ("policyVersion", pv)):
                have = {"runId": batch.run_id, "step": batch.step, "policyVersion": batch.policy_version}[key]
                if have is not None and have != want:
                    raise BatchFormatError(f"batch {uri} is for {key} {have!r} but the request is for {want!r}", key)
            self.trainer.check_vocab(batch)
            versions = self._versions(run)
            pending = [s for s, st in steps.items() if st["result"] is None and st["error"] is None]
            if pending:
                expect = steps[max(pending)]["request"]["policyVersion"] + 1
            elif versions:
                expect = max(versions)
            else:
                expect = None
            if expect is not None and pv != expect:
                raise PolicyVersionError(
                    f"run {run} is at policy version {expect} (checkpoints: {sorted(versions)}); this step says policyVersion {pv}. "
                    "Send the step that continues from the latest version, or start a new runId",
                    "policyVersion",
                )
            if expect is None:
                write_json_atomic(
                    os.path.join(self._run_dir(run), "versions", f"{pv}.json"),
                    {"policyVersion": pv, "checkpointDir": os.path.abspath(init_from or self.base_dir), "optimizer": None, "trainedSteps": 0, "base": True},
                )
            if cur is not None and cur["error"] is not None:
                sd = self._step_dir(run, step)
                os.replace(os.path.join(sd, "error.json"), os.path.join(sd, f"error.{int(time.time() * 1000)}.json"))
            req = {
                "checkpoints": None if checkpoints is None else checkpoints.to_json(),
                "runId": run, "step": step, "batchUri": uri, "batchHash": digest, "policyVersion": pv, "mode": mode,
                "loss": loss.to_json(), "optimizer": opt.to_json(), "checkpointDir": ckpt, "acceptedAt": time.time(),
                "attempts": 0, "sequences": batch.num_sequences, "tokens": batch.num_tokens, "batchProtocol": batch.protocol,
            }
            write_json_atomic(os.path.join(self._step_dir(run, step), "request.json"), req)
            self.queue.append((run, step))
            self.cv.notify_all()
            return 202, self._pending_view(run, step, req)

    def get(self, run: str, step: int, wait: float = 0.0) -> tuple[int, dict]:
        """The step's state; with ``wait`` > 0 a pending step is long-polled: the answer comes as soon as
        the step finishes or fails, or after ``wait`` seconds with its pending state."""
        deadline = time.monotonic() + min(max(wait, 0.0), 300.0)
        with self.cv:
            while True:
                status, body = self._get_locked(run, step)
                left = deadline - time.monotonic()
                if status != 202 or left <= 0:
                    return status, body
                self.cv.wait(left)

    def _get_locked(self, run: str, step: int) -> tuple[int, dict]:
        sd = self._step_dir(run, step)
        req = read_json(os.path.join(sd, "request.json"))
        if req is None:
            raise NotFoundError(f"run {run} has no step {step}; PUT it first", "step")
        res = read_json(os.path.join(sd, "result.json"))
        if res is not None:
            return 200, res
        err = read_json(os.path.join(sd, "error.json"))
        if err is not None:
            return 200, {"state": "failed", "runId": run, "step": step, "batchHash": req["batchHash"], "attempts": req.get("attempts", 0), "error": err}
        return 202, self._pending_view(run, step, req)

    def run_view(self, run: str) -> dict:
        with self.lock:
            versions = self._versions(run)
            if not versions:
                raise NotFoundError(f"no run {run} on this worker", "runId")
            steps = self._steps(run)
            latest = max(versions)
            return {
                "runId": run,
                "policyVersion": latest,
                "checkpoint": {"uri": versions[latest]["checkpointDir"], "hash": versions[latest].get("manifestHash")},
                "versions": sorted(versions),
                "steps": {str(s): ("done" if st["result"] else "failed" if st["error"] else "pending") for s, st in steps.items()},
            }

    def _pending_view(self, run: str, step: int, req: dict) -> dict:
        state = "running" if self.running == (run, step) else "queued"
        return {"state": state, "runId": run, "step": step, "batchHash": req["batchHash"], "policyVersion": req["policyVersion"], "attempts": req.get("attempts", 0)}

    # ------------------------------------------------------------ thread

    def _loop(self) -> None:
        while True:
            with self.cv:
                while not self.queue and not self.stopping:
                    self.cv.wait()
                if self.stopping:
                    return
                run, step = self.queue.pop(0)
                self.running = (run, step)
            try:
                with self.collectives:
                    self._run_step(run, step)
            finally:
                with self.cv:
                    self.running = None
                    self.cv.notify_all()

    def _run_step(self, run: str, step: int) -> None:
        sd = self._step_dir(run, step)
        req = read_json(os.path.join(sd, "request.json"))
        if req is None or read_json(os.path.join(sd, "result.json")) is not None:
            return
        req["attempts"] = req.get("attempts", 0) + 1
        write_json_atomic(os.path.join(sd, "request.json"), req)
        pv = req["policyVersion"]
        t0 = time.perf_counter()
        try:
            versions = self._versions(run)
            ver = versions.get(pv)
            if ver is None:
                raise PolicyVersionError(f"run {run} has no checkpoint for policy version {pv} (have {sorted(versions)})", "policyVersion")
            load = None
            if self.loaded != (run, pv):
                if not (ver.get("base") and self.loaded == ("", -1) and os.path.abspath(ver["checkpointDir"]) == os.path.abspath(self.base_dir)):
                    # A restart, or another run was trained since: back to ``pv`` from disk (:mod:`.checkpoints`).
                    load = plan_restore(self._run_dir(run), pv, versions, self._steps(run), self.base_dir)
            new_v = pv + 1
            ckpt_dir = req.get("checkpointDir") or os.path.join(self.checkpoint_root, run, f"v{new_v}")
            policy = CheckpointPolicy.parse(req.get("checkpoints"))
            trained = ver.get("trainedSteps", 0) + 1
            sharded = None
            if policy is None:
                optim_file = optimizer_dir(self._run_dir(run), new_v)  # the older layout: AdamW state every version
            else:
                optim_file = None
                if policy.sharded_at(trained):
                    sharded = {"model": model_dir(self._run_dir(run), new_v), "optimizer": optimizer_dir(self._run_dir(run), new_v)}
            cmd = {
                "op": "step", "runId": run, "step": step, "load": load, "batchUri": req["batchUri"], "batchHash": req["batchHash"],
                "loss": req["loss"], "optimizer": req["optimizer"], "mode": req["mode"], "trainedSteps": ver.get("trainedSteps", 0),
                "save": {"dir": ckpt_dir, "optimizer": optim_file, "sharded": sharded,
                         "meta": {"runId": run, "step": step, "policyVersion": new_v, "batchHash": req["batchHash"]}},
            }
            self.loaded = None  # the weights are in flux until the step is committed
            self.ctx.broadcast(cmd)
            metrics = execute_step(self.ctx, self.trainer, cmd)
            digest = metrics.pop("manifestHash")
            wdigest = metrics.pop("weightsDigest")
            write_json_atomic(
                os.path.join(self._run_dir(run), "versions", f"{new_v}.json"),
                {"policyVersion": new_v, "checkpointDir": ckpt_dir, "manifestHash": digest,
                 "optimizer": sharded["optimizer"] if sharded else optim_file, "model": sharded["model"] if sharded else None,
                 "weightsDigest": wdigest, "trainedSteps": trained, "step": step, "base": False,
                 "sharded": policy is not None, "milestone": policy is not None and policy.milestone_at(trained)},
            )
            self.loaded = (run, new_v)
            if policy is not None:
                prune(self._versions(run), policy, {os.path.abspath(self.base_dir)})
            secs = time.perf_counter() - t0
            result = {
                "protocol": RESULT_PROTOCOL, "state": "done", "runId": run, "step": step, "batchHash": req["batchHash"],
                "policyVersion": pv, "newPolicyVersion": new_v, **metrics,
                "checkpoint": {"uri": ckpt_dir, "hash": digest, "tokenizerHash": self.tokenizer_hash},
                "attempts": req["attempts"], "stepSeconds": secs,
                "tokensPerSecond": req["tokens"] / metrics["trainSeconds"] if metrics["trainSeconds"] > 0 else None,
                "worldSize": self.ctx.world, "device": str(self.ctx.device), "dtype": self.dtype_name,
            }
            write_json_atomic(os.path.join(sd, "result.json"), result)
            self.counters["steps_done"] += 1
            self.counters["trained_tokens"] += int(req["tokens"])
            self.counters["train_seconds"] += float(metrics["trainSeconds"])
            self.last_step = result
        except RstarWorkerError as e:
            self.counters["steps_failed"] += 1
            write_json_atomic(os.path.join(sd, "error.json"), {**e.to_json(), "status": e.status})
        except Exception as e:  # noqa: BLE001 - a failed step is reported, the worker keeps serving
            self.counters["steps_failed"] += 1
            traceback.print_exc()
            write_json_atomic(os.path.join(sd, "error.json"), {"code": "train_failed", "message": f"{type(e).__name__}: {e}", "status": 500})
