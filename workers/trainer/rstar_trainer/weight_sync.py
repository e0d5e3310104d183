"""Weights from the trainer's memory to the engines over torch.distributed, and the behaviour probe.

Routes (rank 0's HTTP API; :func:`route`):

- ``POST /v1/weight-sync/group`` ``{masterAddress, masterPort, worldSize, groupName, backend, timeoutS?}``:
  the trainer joins the weight-update group as rank 0 (it hosts the store). The engines join at the
  same time (SGLang ``/init_weights_update_group`` with ``rank_offset`` >= 1); the call returns once
  every rank is in. Joining again under the same name replaces the old group.
- ``POST /v1/weight-sync/plan`` ``{runId, policyVersion, bucketMB, dtype}`` -> ``{buckets: [{names,
  dtypes, shapes, bytes}], totalBytes, parameters, groupName}``: the parameters of the policy the trainer
  holds, in state-dict order, cut into buckets of at most ``bucketMB`` MiB (a larger tensor is a bucket
  alone). A tied ``lm_head`` is left out (the engines tie it again). ``groupName``: the group this process
  has joined, null when none (a restarted worker: the caller forms the group again before sending).
- ``POST /v1/weight-sync/buckets/{k}`` ``{runId, policyVersion, bucketMB, dtype}``: broadcast bucket ``k``
  tensor by tensor (the order of the plan), cast to ``dtype``; every engine must at the same time be in
  ``/update_weights_from_distributed`` with that bucket's names, dtypes and shapes. Under torchrun the
  FSDP2 shards of the bucket's parameters are gathered on every rank (``full_tensor``) one parameter at
  a time, so no rank ever holds more than one bucket of the full model.
- ``POST /v1/probe`` ``{runId?, policyVersion?, tokenIds}`` -> ``{logprobs, policyVersion}``:
  log pi(token_i | tokens_<i) for i >= 1 (fp32, raw logits, no temperature) of the weights in memory.

Each call first checks that the trainer holds ``runId``'s ``policyVersion`` (:class:`PolicyVersionError`
otherwise): the weights sent are the trained ones, never a half-loaded or other run's. Calls that touch
the model take the service's ``collectives`` lock, so they never interleave with a training step's
collectives.
"""

from __future__ import annotations

import math
import threading
import time

import torch

from .distributed import DistContext
from .errors import NotFoundError, PolicyVersionError, RequestError
from .update_group import broadcast, destroy, join_update_group

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}
OPS = ("sync_bucket", "probe")


def _parse_dtype(v) -> str:
    v = "bfloat16" if v is None else v
    if v not in DTYPES:
        raise RequestError(f"dtype must be one of {', '.join(DTYPES)} (the engines' serving dtype), got {v!r}", "dtype")
    return v


def _parse_bucket_bytes(v) -> int:
    v = 512 if v is None else v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 65536:
        raise RequestError(f"bucketMB must be a number of MiB in (0, 65536], got {v!r}", "bucketMB")
    return int(v * (1 << 20))


def plan_buckets(trainer, bucket_bytes: int, dtype: str) -> list[dict]:
    """The bucket plan of the model ``trainer`` holds (same on every rank: global shapes, state-dict
    order). Each bucket: ``names``, ``dtypes``, ``shapes``, ``bytes`` (in ``dtype``)."""
    model = trainer.model
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    item = torch.empty((), dtype=DTYPES[dtype]).element_size()
    out: list[dict] = []
    cur: dict | None = None
    for name, t in model.state_dict().items():
        if tied and name == "lm_head.weight":
            continue
        if not t.is_floating_point():
            continue
        size = math.prod(t.shape) * item
        if cur is None or (cur["bytes"] + size > bucket_bytes and cur["names"]):
            cur = {"names": [], "dtypes": [], "shapes": [], "bytes": 0}
            out.append(cur)
        cur["names"].append(name)
        cur["dtypes"].append(dtype)
        cur["shapes"].append(list(t.shape))
        cur["bytes"] += size
    return out


def _staging(trainer, shape, dtype: torch.dtype, device) -> torch.Tensor:
    """A tensor of ``shape``/``dtype`` carved from one allocation kept on ``trainer`` (grown as needed)."""
    numel = max(1, math.prod(shape))
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    stage = getattr(trainer, "_sync_staging", None)
    if stage is None or stage.numel() < nbytes or stage.device != torch.device(device):
        stage = trainer._sync_staging = torch.empty(nbytes, dtype=torch.uint8, device=device)
    return stage[:nbytes].view(dtype)[: math.prod(shape)].view(shape)


@torch.no_grad()
def send_bucket(ctx: DistContext, trainer, names: list[str], dtype: str, group) -> None:
    """Gather each named parameter (FSDP2 shards: ``full_tensor`` on every rank) and broadcast it from
    rank 0 over the update ``group`` in ``dtype``. Collective over the trainer's ranks."""
    from torch.distributed.tensor import DTensor

    sd = trainer.model.state_dict()
    want = DTYPES[dtype]
    for name in names:
        t = sd[name]
        full = t.full_tensor() if isinstance(t, DTensor) else t
        if ctx.is_main:
            full = full.detach()
            if full.dtype == want and full.is_contiguous():
                broadcast(full, group)
            else:
                # Cast into one reused staging allocation: a fresh tensor per parameter costs page faults.
                buf = _staging(trainer, full.shape, want, full.device)
                buf.copy_(full)
                broadcast(buf, group)
        del full


@torch.no_grad()
def probe_logprobs(trainer, token_ids: list[int]) -> list[float]:
    """log pi(token_i | tokens_<i), i = 1..n-1, of the in-memory weights (fp32 values). Collective."""
    from .policy import Micro

    d = trainer.ctx.device
    ids = torch.tensor(token_ids, dtype=torch.long, device=d)
    n = ids.numel()
    m = Micro(
        idx=[0], ids=ids[None], pos=torch.arange(n, device=d)[None], rows=torch.arange(n - 1, device=d), targets=ids[1:],
        old=torch.zeros(n - 1, device=d), adv=torch.zeros(n - 1, device=d), counts=[n - 1],
    )
    was = trainer.model.training
    trainer.model.eval()
    try:
        logp, _ = trainer._logprobs(m, 1.0, False)
    finally:
        trainer.model.train(was)
    return [float(x) for x in logp.float().cpu()]


def follow(ctx: DistContext, trainer, cmd: dict) -> None:
    """Ranks > 0: take part in rank 0's ``sync_bucket`` / ``probe`` command (no update group here)."""
    if cmd["op"] == "sync_bucket":
        send_bucket(ctx, trainer, cmd["names"], cmd["dtype"], None)
    elif cmd["op"] == "probe":
        probe_logprobs(trainer, cmd["tokenIds"])


class WeightSyncService:
    """Rank 0's side: the update group and the calls that read the weights in memory."""

    def __init__(self, svc):
        self.svc = svc
        self.group = None
        self.group_name: str | None = None
        self.lock = threading.Lock()

    def _check_policy(self, body: dict) -> None:
        run, pv = body.get("runId"), body.get("policyVersion")
        if run is None and pv is None:
            return
        if not isinstance(run, str) or isinstance(pv, bool) or not isinstance(pv, int):
            raise RequestError("runId (string) and policyVersion (integer) name the policy whose weights to use", "policyVersion")
        if self.svc.loaded != (run, pv):
            have = self.svc.loaded
            held = "nothing (a step is running or failed)" if have is None else "the base model" if have[1] < 0 else f"run {have[0]} policy version {have[1]}"
            raise PolicyVersionError(f"the trainer holds {held}, not run {run} policy version {pv}; sync after the step that produced it, before the next", "policyVersion")

    def join(self, body: dict) -> dict:
        for k in ("masterAddress", "masterPort", "worldSize", "groupName"):
            if body.get(k) is None:
                raise RequestError(f"{k} is required ({{masterAddress, masterPort, worldSize, groupName, backend}})", k)
        backend = body.get("backend") or ("nccl" if self.svc.ctx.device.type == "cuda" else "gloo")
        with self.lock:
            if self.group is not None:
                destroy(self.group)
                self.group = None
            t0 = time.perf_counter()
            self.group = join_update_group(str(body["masterAddress"]), body["masterPort"], 0, body["worldSize"], body["groupName"], backend,
                                           float(body.get("timeoutS") or 600), self.svc.ctx.device)
            self.group_name = body["groupName"]
            return {"success": True, "groupName": self.group_name, "backend": backend, "rank": 0, "worldSize": body["worldSize"], "seconds": time.perf_counter() - t0}

    def plan(self, body: dict) -> dict:
        self._check_policy(body)
        buckets = plan_buckets(self.svc.trainer, _parse_bucket_bytes(body.get("bucketMB")), _parse_dtype(body.get("dtype")))
        return {"buckets": buckets, "totalBytes": sum(b["bytes"] for b in buckets), "parameters": sum(math.prod(s) for b in buckets for s in b["shapes"]),
                "groupName": self.group_name}

    def send(self, k: int, body: dict) -> dict:
        if self.group is None:
            raise RequestError("no weight-update group: POST /v1/weight-sync/group first (with the engines joining)", "groupName")
        if body.get("groupName") not in (None, self.group_name):
            raise RequestError(f"groupName {body.get('groupName')!r} is not the joined group {self.group_name!r}", "groupName")
        dtype = _parse_dtype(body.get("dtype"))
        with self.lock, self.svc.collectives:
            self._check_policy(body)
            buckets = plan_buckets(self.svc.trainer, _parse_bucket_bytes(body.get("bucketMB")), dtype)
            if not 0 <= k < len(buckets):
                raise NotFoundError(f"bucket {k} does not exist; the plan has {len(buckets)} buckets", "bucket")
            names = buckets[k]["names"]
            t0 = time.perf_counter()
            self.svc.ctx.broadcast({"op": "sync_bucket", "names": names, "dtype": dtype})
            send_bucket(self.svc.ctx, self.svc.trainer, names, dtype, self.group)
            return {"success": True, "bucket": k, "tensors": len(names), "bytes": buckets[k]["bytes"], "seconds": time.perf_counter() - t0}

    def probe(self, body: dict) -> dict:
        ids = body.get("tokenIds")
        vocab = self.svc.trainer.vocab_size
        if not isinstance(ids, list) or len(ids) < 2 or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < vocab for x in ids):
            raise RequestError(f"tokenIds must be a list of at least 2 token ids in [0, {vocab})", "tokenIds")
        with self.svc.collectives:
            self._check_policy(body)
            self.svc.ctx.broadcast({"op": "probe", "tokenIds": ids})
            lps = probe_logprobs(self.svc.trainer, ids)
        loaded = self.svc.loaded
        return {"logprobs": lps, "policyVersion": None if not loaded or loaded[1] < 0 else loaded[1]}


def route(ws: WeightSyncService, method: str, parts: list[str], body_fn):
    """Answer a weight-sync or probe route: ``(status, body)``, or None when ``parts`` is not one."""
    if method != "POST":
        return None
    if parts == ["v1", "weight-sync", "group"]:
        return 200, ws.join(body_fn())
    if parts == ["v1", "weight-sync", "plan"]:
        return 200, ws.plan(body_fn())
    if len(parts) == 4 and parts[:3] == ["v1", "weight-sync", "buckets"]:
        if not parts[3].isdigit():
            raise RequestError(f"bucket {parts[3]!r} must be a non-negative integer", "bucket")
        return 200, ws.send(int(parts[3]), body_fn())
    if parts == ["v1", "probe"]:
        return 200, ws.probe(body_fn())
    return None
