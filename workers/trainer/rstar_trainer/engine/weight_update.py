"""The reference engine's side of weight updates over torch.distributed, and prompt logprobs.

SGLang's routes (field names as SGLang's ``InitWeightsUpdateGroupReqInput`` /
``UpdateWeightsFromDistributedReqInput`` define them):

- ``POST /init_weights_update_group`` ``{master_address, master_port, rank_offset, world_size,
  group_name, backend}`` -> ``{success, message}``: join the group as rank ``rank_offset`` (this engine
  has one device; SGLang adds its tensor-parallel rank). Blocks until every rank has joined.
- ``POST /update_weights_from_distributed`` ``{names, dtypes, shapes, group_name, weight_version?,
  flush_cache?, abort_all_requests?}`` -> ``{success, message}``: receive each tensor in order from
  rank 0's broadcasts and copy it into the model (cast to the serving dtype). Runs between scheduler
  steps like a disk load; ``weight_version`` becomes the reported version.
- ``POST /destroy_weights_update_group`` ``{group_name}``.

vLLM's weight-transfer routes (``vllm serve --weight-transfer-config '{"backend": "nccl"}'`` with
``VLLM_SERVER_DEV_MODE=1``): ``POST /init_weight_transfer_engine`` ``{init_info: {master_address,
master_port, rank_offset, world_size}}``, ``POST /start_weight_update``, ``POST /update_weights``
``{update_info: {names, dtype_names, shapes}}``, ``POST /finish_weight_update``; the group is named
:data:`VLLM_GROUP` here (vLLM names none). The tensors travel the same way.

Prompt logprobs (SGLang ``return_logprob`` + ``logprob_start_len``): :func:`prompt_logprobs`.
"""

from __future__ import annotations

import threading

import torch

from ..errors import RequestError
from ..update_group import broadcast, destroy, join_update_group

VLLM_GROUP = "rstar-vllm-weights"
_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16, "torch.bfloat16": torch.bfloat16,
           "torch.float32": torch.float32, "torch.float16": torch.float16}


class WeightReceiver:
    """The engine's update groups (by name) and the receive of one bucket."""

    def __init__(self, sched):
        self.sched = sched
        self.groups: dict[str, object] = {}
        self.lock = threading.Lock()
        self.device = next(sched.runner.model.parameters()).device

    def _staging(self, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        """A receive buffer of ``shape`` and ``dtype`` carved from one reused allocation (fresh large
        allocations cost a page fault per page on every update)."""
        n = max(1, int(torch.Size(shape).numel())) * torch.empty((), dtype=dtype).element_size()
        if getattr(self, "_stage", None) is None or self._stage.numel() < n:
            self._stage = torch.empty(n, dtype=torch.uint8, device=self.device)
        return self._stage[:n].view(dtype)[: int(torch.Size(shape).numel())].view(shape)

    def init_group(self, body: dict) -> dict:
        name = body.get("group_name") or "weight_update_group"
        for k in ("master_address", "master_port", "rank_offset", "world_size"):
            if body.get(k) is None:
                raise RequestError(f"{k} is required", k)
        backend = body.get("backend") or ("nccl" if self.device.type == "cuda" else "gloo")
        with self.lock:
            old = self.groups.pop(name, None)
            if old is not None:
                destroy(old)
            try:
                self.groups[name] = join_update_group(str(body["master_address"]), body["master_port"], body["rank_offset"], body["world_size"],
                                                      name, backend, float(body.get("timeout_s") or 600), self.device)
            except RuntimeError as e:  # the store or a rank did not answer in time
                return {"success": False, "message": f"could not join weight-update group {name!r}: {e}"}
        return {"success": True, "message": f"joined weight-update group {name!r} as rank {body['rank_offset']} of {body['world_size']} ({backend})"}

    def destroy_group(self, body: dict) -> dict:
        name = body.get("group_name") or "weight_update_group"
        with self.lock:
            g = self.groups.pop(name, None)
        if g is not None:
            destroy(g)
        return {"success": True, "message": f"left weight-update group {name!r}" if g is not None else f"no group {name!r}"}

    def update(self, body: dict, *, names_key: str = "names", dtypes_key: str = "dtypes") -> dict:
        names, dtypes, shapes = body.get(names_key), body.get(dtypes_key), body.get("shapes")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise RequestError(f"{names_key} must be a non-empty list of parameter names", names_key)
        if not isinstance(dtypes, list) or len(dtypes) != len(names) or any(d not in _DTYPES for d in dtypes):
            raise RequestError(f"{dtypes_key} must list one of {sorted(set(k.replace('torch.', '') for k in _DTYPES))} per name", dtypes_key)
        if not isinstance(shapes, list) or len(shapes) != len(names) or not all(isinstance(s, list) and all(isinstance(x, int) and x >= 0 for x in s) for s in shapes):
            raise RequestError("shapes must list one shape (a list of non-negative integers) per name", "shapes")
        name = body.get("group_name") or "weight_update_group"
        group = self.groups.get(name)
        if group is None:
            raise RequestError(f"no weight-update group {name!r}: POST /init_weights_update_group first", "group_name")
        own = self.sched.runner.model.state_dict()
        tied = bool(getattr(self.sched.runner.config, "tie_word_embeddings", False))
        for n, s in zip(names, shapes):
            p = own.get(n)
            if p is None:
                raise RequestError(f"parameter {n!r} is not in the served model", "names")
            if list(p.shape) != s:
                raise RequestError(f"{n}: shape {s} != served shape {list(p.shape)}", "shapes")
        version = body.get("weight_version")

        def receive() -> dict:
            try:
                with torch.no_grad():
                    for n, d, s in zip(names, dtypes, shapes):
                        dst = own[n]
                        if _DTYPES[d] == dst.dtype and dst.is_contiguous():
                            # Straight into the weights (generation is paused): no fresh buffer to fault in.
                            broadcast(dst, group)
                        else:
                            buf = self._staging(s, _DTYPES[d])
                            broadcast(buf, group)
                            dst.copy_(buf)
                        if tied and n == "model.embed_tokens.weight" and "lm_head.weight" in own and own["lm_head.weight"].data_ptr() != own[n].data_ptr():
                            own["lm_head.weight"].copy_(own[n])
            except RuntimeError as e:
                return {"success": False, "message": f"receiving weights over group {name!r} failed: {e}"}
            with self.sched.cv:
                if version is not None:
                    self.sched.weight_version = str(version)
                    self.sched.stats["weight_updates"] += 1
                # The weights no longer come from a checkpoint the engine verified.
                self.sched.manifest_hash = None
            return {"success": True, "message": f"received {len(names)} tensors over {name!r}", "weight_version": self.sched.weight_version}

        return self.sched.update_weights("", None if version is None else str(version), bool(body.get("abort_all_requests")), fn=receive)


@torch.inference_mode()
def prompt_logprobs(runner, ids: list[int], start: int) -> list[float | None]:
    """log p(ids[i] | ids[:i]) for i = start..len-1 of the served weights, from the raw logits (no
    temperature), as fp32 values; position 0 has no prefix and gives None (SGLang's
    ``input_token_logprobs``)."""
    x = torch.tensor(ids, dtype=torch.long, device=next(runner.model.parameters()).device)[None]
    logits = runner.model(input_ids=x, use_cache=False).logits[0].float()
    lp = torch.log_softmax(logits[:-1], dim=-1).gather(-1, x[0, 1:, None]).squeeze(-1).cpu().tolist()
    out: list[float | None] = [None] + [float(v) for v in lp]
    return out[start:]
