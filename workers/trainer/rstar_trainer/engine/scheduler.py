"""Continuous batching under a KV-token capacity, the way SGLang schedules.

- A request's KV use is its prompt plus the tokens generated so far. ``max_total_num_tokens`` caps the
  sum over the running batch.
- Admission (``sglang`` policy): a waiting request joins when, for every running request and the new
  ones, ``current tokens + remaining new tokens x new_token_ratio`` fits. The ratio starts at
  ``init_new_token_ratio`` (0.7) and decays by ``decay`` per decode step to ``min_new_token_ratio``
  (0.1): the scheduler gets more optimistic while nothing overflows.
- When a decode step would overflow (every running request adds one token), requests are **retracted**
  — the one with the fewest generated tokens first (ties: longest prompt), as SGLang's
  ``retract_decode`` orders them — their KV is freed, they go back to the waiting queue with their
  generated tokens kept, and they are **recomputed** (prefill of prompt + output) when they are admitted
  again. The ratio is then re-estimated as (decoded + 20 x running) / (max new tokens of the running).
- ``reserve`` policy: ``prompt + max_new_tokens`` is reserved at admission (ratio 1): nothing is ever
  retracted, requests wait instead.
- Waiting requests are served first-come first-served (a retracted request keeps its arrival time).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass, field

import torch

from ..errors import CheckpointIntegrityError, KvCapacityError, RequestError
from ..model_io import tokenizer_hash, verify_checkpoint
from .occupation import MemoryReleasedError, allocate_weights, offload_weights, weights_on_meta
from .runner import BatchState, Runner
from .sampling import SamplingParams, make_generator, sample_token

_arrival = itertools.count()


@dataclass(eq=False)
class Request:
    rid: str
    prompt: list[int]
    sp: SamplingParams
    max_new: int
    gen: torch.Generator
    arrival: int = field(default_factory=lambda: next(_arrival))
    output: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: dict | None = None
    done: threading.Event = field(default_factory=threading.Event)
    abort_requested: bool = False
    retractions: int = 0
    weight_version: str = ""
    created: float = field(default_factory=time.monotonic)
    first_token: float | None = None

    @property
    def kv_tokens(self) -> int:
        return len(self.prompt) + len(self.output)

    @property
    def remaining(self) -> int:
        return max(0, self.max_new - len(self.output))


@dataclass
class WeightUpdate:
    """A weight load (``path``) or, with ``op`` set, another change of the model (weights received over
    torch.distributed, a memory release/resume) that the scheduler thread runs once no request is running;
    ``op()`` returns the answer."""

    path: str
    version: str | None
    abort_all: bool
    op: object | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: dict | None = None


class Scheduler:
    """Owns the model; one thread runs prefill/decode steps. Other threads submit and abort."""

    def __init__(self, runner: Runner, tokenizer, *, capacity: int, max_running: int = 64, max_prefill_tokens: int = 16384,
                 policy: str = "sglang", init_ratio: float = 0.7, min_ratio: float = 0.1, decay: float | None = None,
                 original_logprob: bool = False, model_path: str = "", weight_version: str = "default"):
        if capacity <= 0:
            raise RequestError(f"--kv-capacity-tokens must be a positive integer, got {capacity}", "kv_capacity_tokens")
        if policy not in ("sglang", "reserve"):
            raise RequestError(f"--admission must be sglang or reserve, got {policy!r}", "admission")
        self.runner = runner
        self.tok = tokenizer
        self.capacity = capacity
        self.max_running = max_running
        self.max_prefill_tokens = max_prefill_tokens
        self.policy = policy
        self.init_ratio = init_ratio
        self.min_ratio = min_ratio
        self.decay = decay if decay is not None else (init_ratio - min_ratio) / 600
        self.ratio = init_ratio
        self.original_logprob = original_logprob
        self.context = int(getattr(runner.config, "max_position_embeddings", 1 << 30))
        self.eos_ids = self._eos_ids()
        self.model_path = model_path
        self.weight_version = weight_version
        self.manifest_hash: str | None = None
        self.tokenizer_hash = tokenizer_hash(model_path) if model_path else ""
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.waiting: list[Request] = []
        self.running: list[Request] = []
        self.admitting: list[Request] = []
        self.state: BatchState | None = None
        self.update: WeightUpdate | None = None
        # Memory regions released (:mod:`.occupation`) and the CPU copies of the buffers while weights are.
        self.released: set[str] = set()
        self._buffers: dict[str, torch.Tensor] = {}
        self.stopping = False
        self.stats = {"num_retractions": 0, "num_retracted_tokens": 0, "prefill_tokens": 0, "generated_tokens": 0,
                      "decode_steps": 0, "prefill_batches": 0, "finished_requests": 0, "aborted_requests": 0, "max_kv_tokens_in_use": 0,
                      "weight_updates": 0, "memory_releases": 0}
        self.thread = threading.Thread(target=self._loop, name="engine-scheduler", daemon=True)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        gc = getattr(self.runner.model, "generation_config", None)
        for src in (getattr(gc, "eos_token_id", None), getattr(self.runner.config, "eos_token_id", None), getattr(self.tok, "eos_token_id", None)):
            if isinstance(src, int):
                ids.add(src)
            elif isinstance(src, (list, tuple)):
                ids.update(int(x) for x in src)
        return ids

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        with self.cv:
            self.stopping = True
            self.cv.notify_all()

    # ------------------------------------------------------------ clients

    def submit(self, rid: str, prompt: list[int], sp: SamplingParams) -> Request:
        """Queue a request. Raises :class:`KvCapacityError` when it can never fit, :class:`RequestError`
        on an empty or out-of-vocabulary prompt."""
        vocab = int(self.runner.config.vocab_size)
        if not prompt:
            raise RequestError("input_ids must not be empty", "input_ids")
        if any((not isinstance(t, int)) or isinstance(t, bool) or t < 0 or t >= vocab for t in prompt):
            raise RequestError(f"input_ids must be token ids in [0, {vocab})", "input_ids")
        if len(prompt) >= self.context:
            raise RequestError(f"the prompt has {len(prompt)} tokens; the model's context is {self.context}", "input_ids")
        max_new = min(sp.max_new_tokens, self.context - len(prompt))
        if len(prompt) + max_new > self.capacity:
            raise KvCapacityError(
                f"prompt ({len(prompt)}) + max_new_tokens ({max_new}) = {len(prompt) + max_new} tokens can never fit in the KV cache "
                f"(max_total_num_tokens {self.capacity}); lower max_new_tokens or start the engine with a larger --kv-capacity-tokens",
                "sampling_params.max_new_tokens",
            )
        req = Request(rid=rid, prompt=list(prompt), sp=sp, max_new=max_new, gen=make_generator(sp.seed))
        with self.cv:
            if self.released:
                raise MemoryReleasedError(
                    f"the engine's memory is released ({', '.join(sorted(self.released))}); POST /resume_memory_occupation before generating",
                    "memory",
                )
            if max_new == 0:
                self._finish(req, {"type": "length", "length": 0})
                return req
            self._enqueue(req)
            self.cv.notify_all()
        return req

    def abort(self, rid: str | None = None, all_: bool = False) -> int:
        """Abort by request id (or all). Waiting requests end at once, running ones at the next step."""
        n = 0
        with self.cv:
            for r in list(self.waiting):
                if all_ or r.rid == rid:
                    self.waiting.remove(r)
                    self._finish(r, {"type": "abort", "message": "Abort requested"})
                    n += 1
            for r in self.running + self.admitting:
                if all_ or r.rid == rid:
                    r.abort_requested = True
                    n += 1
            self.cv.notify_all()
        return n

    def update_weights(self, path: str, version: str | None, abort_all: bool, fn=None) -> dict:
        """Load new weights between steps (SGLang's ``/update_weights_from_disk``; with ``fn``, whatever
        ``fn()`` does, e.g. receive them over torch.distributed, returning the answer): new requests wait;
        running ones finish first (or are aborted with ``abort_all``). Blocks until done."""
        def received() -> dict:
            self._require_weights()
            return fn()

        up = WeightUpdate(path=path, version=version, abort_all=abort_all, op=received if fn is not None else None)
        with self.cv:
            if self.update is not None:
                return {"success": False, "message": "another weight update is in progress", "num_paused_requests": 0}
            self.update = up
            if abort_all:
                for r in self.running:
                    r.abort_requested = True
            self.cv.notify_all()
        up.done.wait()
        return up.result or {"success": False, "message": "the engine stopped before the update"}

    def release_memory(self, tags: list[str]) -> dict:
        """SGLang's ``/release_memory_occupation``: once the running requests have finished, abort the
        waiting ones and free the ``tags`` regions (:mod:`.occupation`). Blocks until done."""
        def op() -> dict:
            with self.cv:
                for r in list(self.waiting):
                    self.waiting.remove(r)
                    self._finish(r, {"type": "abort", "message": "engine memory released"})
                self.state = None
                self.released.update(tags)
                self.stats["memory_releases"] += 1
            if "weights" in tags and not weights_on_meta(self.runner.model):
                self._buffers = offload_weights(self.runner.model)
            return {"success": True, "message": f"released {tags}", "released": sorted(self.released)}
        return self._control(op)

    def resume_memory(self, tags: list[str]) -> dict:
        """SGLang's ``/resume_memory_occupation``: allocate the ``tags`` regions again; resuming
        ``weights`` re-reads the checkpoint last loaded (verified by its manifest). Blocks until done."""
        def op() -> dict:
            if "weights" in tags and weights_on_meta(self.runner.model):
                allocate_weights(self.runner.model, self.runner.device, self._buffers)
                with self.cv:
                    self.released.discard("weights")
                self._load(self.model_path, self.weight_version, count=False)
                self._buffers = {}
            with self.cv:
                self.released.difference_update(tags)
            return {"success": True, "message": f"resumed {tags}", "released": sorted(self.released)}
        return self._control(op)

    def _control(self, op) -> dict:
        up = WeightUpdate(path="", version=None, abort_all=False, op=op)
        with self.cv:
            if self.update is not None:
                return {"success": False, "message": "another weight update or memory operation is in progress"}
            self.update = up
            self.cv.notify_all()
        up.done.wait()
        return up.result or {"success": False, "message": "the engine stopped before the operation"}

    def snapshot(self) -> dict:
        with self.lock:
            used = sum(r.kv_tokens for r in self.running)
            return {**self.stats, "num_running_reqs": len(self.running), "num_waiting_reqs": len(self.waiting),
                    "kv_tokens_in_use": used, "new_token_ratio": self.ratio, "weight_version": self.weight_version,
                    "manifest_hash": self.manifest_hash, "memory_released": sorted(self.released)}

    # ------------------------------------------------------------- thread

    def _enqueue(self, req: Request) -> None:
        keys = [r.arrival for r in self.waiting]
        self.waiting.insert(bisect.bisect(keys, req.arrival), req)

    def _finish(self, req: Request, finish: dict) -> None:
        req.finish = finish
        req.weight_version = self.weight_version
        self.stats["finished_requests"] += 1
        if finish["type"] == "abort":
            self.stats["aborted_requests"] += 1
        req.done.set()

    def _est(self, r: Request, ratio: float) -> float:
        return r.kv_tokens + r.remaining * ratio

    def _loop(self) -> None:
        while True:
            with self.cv:
                while not self.stopping and not self.waiting and not self.running and self.update is None:
                    self.cv.wait()
                if self.stopping:
                    for r in self.waiting + self.running:
                        self._finish(r, {"type": "abort", "message": "engine shutting down"})
                    return
                # Aborted running requests leave now.
                gone = [r for r in self.running if r.abort_requested]
                for r in gone:
                    self._finish(r, {"type": "abort", "message": "Abort requested"})
                if gone:
                    self._keep([r for r in self.running if not r.abort_requested])
                if self.update is not None and not self.running:
                    up = self.update
                    paused = len(self.waiting)
                else:
                    up = None
                admit = self._admissible() if self.update is None else []
                for r in admit:
                    self.waiting.remove(r)
                self.admitting = admit
            if up is not None:
                self._do_update(up, paused)
                continue
            try:
                if admit:
                    self._prefill(admit)
                if self.running:
                    self._decode()
            except Exception as e:  # noqa: BLE001 - fail the affected requests, keep the engine alive
                with self.cv:
                    for r in admit + self.running:
                        if not r.done.is_set():
                            self._finish(r, {"type": "abort", "message": f"engine error: {type(e).__name__}: {e}"})
                    self.running, self.state = [], None

    def _admissible(self) -> list[Request]:
        ratio = 1.0 if self.policy == "reserve" else self.ratio
        budget = self.capacity - sum(self._est(r, ratio) for r in self.running)
        used = sum(r.kv_tokens for r in self.running)
        out, prefill = [], 0
        for r in self.waiting:
            if r.abort_requested:
                continue
            if len(self.running) + len(out) >= self.max_running:
                break
            need = self._est(r, ratio)
            first = r.kv_tokens + 1
            if need > budget or used + first > self.capacity or (out and prefill + r.kv_tokens > self.max_prefill_tokens):
                break  # first come, first served: nobody overtakes the head of the queue
            out.append(r)
            budget -= need
            used += first
            prefill += r.kv_tokens
        return out

    def _keep(self, keep: list[Request]) -> None:
        if not keep:
            self.running, self.state = [], None
            return
        pos = {id(r): i for i, r in enumerate(self.running)}
        self.state = self.runner.select(self.state, [pos[id(r)] for r in keep])
        self.running = keep

    def _prefill(self, reqs: list[Request]) -> None:
        seqs = [r.prompt + r.output for r in reqs]
        state, logits = self.runner.prefill(seqs)
        with self.cv:
            self.stats["prefill_tokens"] += sum(len(s) for s in seqs)
            self.stats["prefill_batches"] += 1
        alive = self._sample(reqs, logits)
        with self.cv:
            if len(alive) < len(reqs):
                idx = {id(r): i for i, r in enumerate(reqs)}
                state = self.runner.select(state, [idx[id(r)] for r in alive]) if alive else None
            if alive:
                self.state = self.runner.merge(self.state, state)
                self.running = self.running + alive
            self.admitting = []

    def _decode(self) -> None:
        with self.cv:
            used = sum(r.kv_tokens for r in self.running)
            if used + len(self.running) > self.capacity and self.policy == "sglang":
                self._retract(used)
            if not self.running:
                return
            reqs = list(self.running)
            state = self.state
        logits = self.runner.decode(state, [r.output[-1] for r in reqs])
        with self.cv:
            self.stats["decode_steps"] += 1
            if self.policy == "sglang":
                self.ratio = max(self.min_ratio, self.ratio - self.decay)
        alive = self._sample(reqs, logits)
        with self.cv:
            if len(alive) < len(reqs):
                self._keep(alive)

    def _retract(self, used: int) -> None:
        """Free KV by sending requests back to the waiting queue until the next decode step fits."""
        order = sorted(self.running, key=lambda r: (len(r.output), -len(r.prompt)), reverse=True)
        victims = []
        while order and used + len(order) > self.capacity:
            v = order.pop()
            used -= v.kv_tokens
            victims.append(v)
        for v in victims:
            v.retractions += 1
            self.stats["num_retractions"] += 1
            self.stats["num_retracted_tokens"] += v.kv_tokens
            self._enqueue(v)
        keep = [r for r in self.running if r not in victims]
        self._keep(keep)
        decoded = sum(len(r.output) for r in keep)
        max_new = sum(r.max_new for r in keep)
        self.ratio = min(1.0, (decoded + 20 * len(keep)) / max_new) if max_new else self.init_ratio

    def _sample(self, reqs: list[Request], logits: torch.Tensor) -> list[Request]:
        """Sample the next token of each request, check stop conditions; returns those still running."""
        alive = []
        now = time.monotonic()
        for r, lg in zip(reqs, logits):
            tok, lp = sample_token(lg, r.sp, r.gen, self.original_logprob)
            r.output.append(tok)
            r.logprobs.append(lp)
            if r.first_token is None:
                r.first_token = now
            fin = self._stop(r, tok)
            if fin is None:
                alive.append(r)
            else:
                with self.cv:
                    self._finish(r, fin)
        with self.cv:
            self.stats["generated_tokens"] += len(reqs)
            self.stats["max_kv_tokens_in_use"] = max(self.stats["max_kv_tokens_in_use"], sum(r.kv_tokens for r in alive) + sum(r.kv_tokens for r in self.running if r not in reqs))
        return alive

    def _stop(self, r: Request, tok: int) -> dict | None:
        if r.abort_requested:
            return {"type": "abort", "message": "Abort requested"}
        if not r.sp.ignore_eos and tok in self.eos_ids:
            return {"type": "stop", "matched": tok}
        if tok in r.sp.stop_token_ids:
            return {"type": "stop", "matched": tok}
        if r.sp.stop:
            longest = max(len(s) for s in r.sp.stop)
            tail = self.tok.decode(r.output[-(longest + 4) :], skip_special_tokens=False)
            for s in r.sp.stop:
                if s in tail:
                    return {"type": "stop", "matched": s}
        if len(r.output) >= r.max_new:
            return {"type": "length", "length": len(r.output)}
        return None

    # ------------------------------------------------------------- weights

    def _do_update(self, up: WeightUpdate, paused: int) -> None:
        try:
            res = up.op() if up.op is not None else self._load(up.path, up.version)
            res["num_paused_requests"] = paused
        except (CheckpointIntegrityError, RequestError, MemoryReleasedError, OSError, ValueError) as e:
            res = {"success": False, "message": str(e), "num_paused_requests": paused,
                   "code": getattr(e, "code", "weight_update_failed"), "weight_version": self.weight_version, "manifest_hash": self.manifest_hash}
        with self.cv:
            up.result = res
            self.update = None
            self.cv.notify_all()
        up.done.set()

    def _require_weights(self) -> None:
        """Weights can be updated only while they are allocated (not released to ``meta``)."""
        if "weights" in self.released:
            raise MemoryReleasedError("the engine's weights are released; POST /resume_memory_occupation with tags [\"weights\"] before updating them", "model_path")

    def _load(self, path: str, version: str | None, count: bool = True) -> dict:
        from safetensors.torch import load_file

        self._require_weights()

        if not os.path.isdir(path):
            raise RequestError(f"model_path {path!r} is not a directory", "model_path")
        mhash = None
        manifest = None
        if os.path.isfile(os.path.join(path, "manifest.json")):
            mhash, manifest = verify_checkpoint(path, files=("config.json", ".safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"))
        elif os.path.isfile(os.path.join(path, "STABLE")):
            raise CheckpointIntegrityError(f"checkpoint {path!r} has a STABLE marker but no manifest.json", "model_path")
        if os.path.isfile(os.path.join(path, "tokenizer.json")):
            th = tokenizer_hash(path)
            if self.tokenizer_hash and th != self.tokenizer_hash:
                raise RequestError(
                    f"checkpoint {path!r} has tokenizer hash {th}, the engine serves {self.tokenizer_hash}; engines and trainer must share one tokenizer",
                    "model_path",
                )
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        for k in ("hidden_size", "num_hidden_layers", "vocab_size"):
            if k in cfg and cfg[k] != getattr(self.runner.config, k, cfg[k]):
                raise RequestError(f"checkpoint {path!r} has {k} {cfg[k]}, the served model {getattr(self.runner.config, k)}; load a checkpoint of the same architecture", "model_path")
        tensors: dict[str, torch.Tensor] = {}
        files = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        if not files:
            raise RequestError(f"model_path {path!r} has no *.safetensors weights", "model_path")
        for n in files:
            tensors.update(load_file(os.path.join(path, n)))
        missing = self.runner.load_weights(tensors)
        if missing:
            raise RequestError(f"checkpoint {path!r} lacks {len(missing)} tensors of the model (first: {missing[0]})", "model_path")
        if version is None:
            version = str(manifest["policyVersion"]) if manifest and "policyVersion" in manifest else os.path.basename(os.path.normpath(path))
        with self.cv:
            self.model_path = path
            self.weight_version = version
            self.manifest_hash = mhash
            if count:
                self.stats["weight_updates"] += 1
        return {"success": True, "message": f"Succeeded to update model weights from {path}.", "weight_version": version,
                "manifest_hash": mhash, "model_path": path, "tokenizer_hash": self.tokenizer_hash}
