"""The reference engine's HTTP API: SGLang's native routes and vLLM's ``/v1/completions``.

SGLang: ``POST /generate`` (``return_logprob`` with ``logprob_start_len`` >= 0 adds the prompt's
``input_token_logprobs``), ``POST /abort_request``, ``POST /update_weights_from_disk``,
``POST /init_weights_update_group``, ``POST /update_weights_from_distributed`` (engine/weight_update.py),
``GET|POST /flush_cache``, ``POST /release_memory_occupation`` and ``POST /resume_memory_occupation``
(``{tags?: ["weights", "kv_cache"]}``, :mod:`.occupation`), ``GET /get_server_info`` (``/server_info``), ``GET /get_model_info``
(``/model_info``), ``GET /get_weight_version``, ``GET /health``, ``GET /health_generate``.
vLLM: the weight-transfer routes (engine/weight_update.py), ``POST /v1/completions`` (token-id prompts, logprobs, ``return_tokens_as_token_ids``,
``return_token_ids``), ``GET /v1/models``, ``POST /reset_prefix_cache``, ``GET /metrics`` (with
``vllm:cache_config_info`` so the vLLM adapter reads the KV capacity). A client that disconnects
before its answer has its request aborted, as both servers do.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import time

from .. import __version__
from ..errors import NotFoundError, RequestError
from ..http_util import QuietHandler, path_parts, read_body, send, send_error
from .occupation import parse_tags, weights_on_meta
from .sampling import parse_sampling
from .weight_update import VLLM_GROUP, WeightReceiver, prompt_logprobs
from .scheduler import Request, Scheduler

_ids = itertools.count()


def _client_gone(h) -> bool:
    """True when the client closed its connection (readable with no data)."""
    sock = h.connection
    try:
        r, _w, _x = select.select([sock], [], [], 0)
        if not r:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _wait(h, sched: Scheduler, reqs: list[Request]) -> None:
    for r in reqs:
        while not r.done.wait(0.1):
            if _client_gone(h):
                for x in reqs:
                    sched.abort(x.rid)
                r.done.wait()
                break


def _prompt(v, field: str, tok) -> list[int]:
    if isinstance(v, str):
        return tok.encode(v, add_special_tokens=False)
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return v
    raise RequestError(f"{field} must be a list of integer token ids or a string", field)


class EngineApp:
    def __init__(self, sched: Scheduler, tok, *, served_model_name: str, device: str, dtype: str):
        self.sched = sched
        self.tok = tok
        self.name = served_model_name
        self.device = device
        self.dtype = dtype
        self.started = time.time()
        self.receiver = WeightReceiver(sched)

    # -------------------------------------------------------------- text

    def _text(self, r: Request, skip_special: bool, no_stop_trim: bool) -> str:
        text = self.tok.decode(r.output, skip_special_tokens=skip_special)
        fin = r.finish or {}
        if fin.get("type") == "stop" and isinstance(fin.get("matched"), str) and not no_stop_trim:
            i = text.find(fin["matched"])
            if i >= 0:
                text = text[:i]
        return text

    # ------------------------------------------------------------ SGLang

    def generate(self, h, body: dict):
        if body.get("stream"):
            raise RequestError("stream is not supported by the reference engine (send stream: false)", "stream")
        raw = body.get("input_ids", body.get("text"))
        if raw is None:
            raise RequestError("send input_ids (token ids) or text", "input_ids")
        batched = isinstance(raw, list) and len(raw) > 0 and isinstance(raw[0], (list, str))
        inputs = raw if batched else [raw]
        sp_raw = body.get("sampling_params") or {}
        sps = sp_raw if isinstance(sp_raw, list) else [sp_raw] * len(inputs)
        if len(sps) != len(inputs):
            raise RequestError("sampling_params as a list must have one entry per input", "sampling_params")
        rid = body.get("rid")
        rids = rid if isinstance(rid, list) else [rid if (rid is not None and not batched) else f"{rid or 'req'}-{next(_ids)}-{i}" for i in range(len(inputs))]
        if len(rids) != len(inputs):
            raise RequestError("rid as a list must have one entry per input", "rid")
        prompts = [_prompt(x, f"input_ids[{i}]" if batched else "input_ids", self.tok) for i, x in enumerate(inputs)]
        params = []
        for i, sp in enumerate(sps):
            p = parse_sampling(sp, "sampling_params")
            if batched and p.seed is not None and not isinstance(sp_raw, list):
                p.seed += i
            params.append(p)
        reqs = [self.sched.submit(str(r), ids, p) for r, ids, p in zip(rids, prompts, params)]
        _wait(h, self.sched, reqs)
        want_lp = bool(body.get("return_logprob"))
        with_text = bool(body.get("return_text_in_logprobs"))
        out = []
        for r, ids, p in zip(reqs, prompts, params):
            meta = {
                "id": r.rid,
                "finish_reason": r.finish,
                "prompt_tokens": len(ids),
                "completion_tokens": len(r.output),
                "cached_tokens": 0,
                "weight_version": r.weight_version,
                "retraction_count": r.retractions,
                "e2e_latency": time.monotonic() - r.created,
            }
            if want_lp:
                meta["output_token_logprobs"] = [[lp, t, self.tok.decode([t]) if with_text else None] for lp, t in zip(r.logprobs, r.output)]
                start = body.get("logprob_start_len")
                start = -1 if start is None else start
                if isinstance(start, bool) or not isinstance(start, int):
                    raise RequestError("logprob_start_len must be an integer (-1: no prompt logprobs)", "logprob_start_len")
                if 0 <= start < len(ids):
                    lps = prompt_logprobs(self.sched.runner, ids, start)
                    meta["input_token_logprobs"] = [[lp, t, self.tok.decode([t]) if with_text else None] for lp, t in zip(lps, ids[start:])]
                else:
                    meta["input_token_logprobs"] = []
            out.append({"text": self._text(r, p.skip_special_tokens, p.no_stop_trim), "output_ids": r.output, "meta_info": meta})
        send(h, 200, out if batched else out[0])

    def abort_request(self, h, body: dict):
        if body.get("abort_all"):
            self.sched.abort(all_=True)
        elif isinstance(body.get("rid"), str):
            self.sched.abort(body["rid"])
        else:
            raise RequestError('send {"rid": "<request id>"} or {"abort_all": true}', "rid")
        send(h, 200, "")

    def update_weights(self, h, body: dict):
        path = body.get("model_path")
        if not isinstance(path, str) or not path:
            raise RequestError("model_path must name a checkpoint directory the engine can read", "model_path")
        fmt = body.get("load_format")
        if fmt not in (None, "auto", "safetensors"):
            raise RequestError(f"load_format {fmt!r} is not supported; the reference engine reads safetensors", "load_format")
        version = body.get("weight_version")
        if version is not None and not isinstance(version, (str, int)):
            raise RequestError("weight_version must be a string", "weight_version")
        res = self.sched.update_weights(path, None if version is None else str(version), bool(body.get("abort_all_requests")))
        send(h, 200 if res.get("success") else 400, res)

    def occupation(self, h, path: str, body):
        """SGLang's ``/release_memory_occupation`` and ``/resume_memory_occupation`` ``{tags?}`` (:mod:`.occupation`)."""
        tags = parse_tags(body if isinstance(body, dict) else None)
        res = self.sched.release_memory(tags) if path.startswith("/release") else self.sched.resume_memory(tags)
        send(h, 200 if res.get("success") else 400, res)

    def server_info(self) -> dict:
        s = self.sched
        snap = s.snapshot()
        return {
            "engine": "rstar-reference",
            "version": __version__,
            "model_path": s.model_path,
            "tokenizer_path": s.model_path,
            "served_model_name": self.name,
            "max_total_num_tokens": s.capacity,
            "context_length": s.context,
            "max_running_requests": s.max_running,
            "max_prefill_tokens": s.max_prefill_tokens,
            "admission": s.policy,
            "device": self.device,
            "dtype": self.dtype,
            "tokenizer_hash": s.tokenizer_hash,
            "weights_on_meta": weights_on_meta(s.runner.model),
            "vocab_size": int(s.runner.config.vocab_size),
            "eos_token_ids": sorted(s.eos_ids),
            "logprobs": "original" if s.original_logprob else "temperature-scaled",
            "uptime_s": time.time() - self.started,
            **snap,
            "internal_states": [{"max_total_num_tokens": s.capacity, "num_retractions": snap["num_retractions"], "new_token_ratio": snap["new_token_ratio"]}],
        }

    def model_info(self) -> dict:
        s = self.sched
        cfg = s.runner.config
        return {
            "model_path": s.model_path, "tokenizer_path": s.model_path, "is_generation": True, "served_model_name": self.name,
            "weight_version": s.weight_version, "manifest_hash": s.manifest_hash, "tokenizer_hash": s.tokenizer_hash,
            "model_type": getattr(cfg, "model_type", None), "architectures": getattr(cfg, "architectures", None),
            "preferred_sampling_params": None,
        }

    def metrics(self) -> str:
        snap = self.sched.snapshot()
        cap = self.sched.capacity
        lines = [
            "# HELP vllm:cache_config_info KV cache configuration (block_size x num_gpu_blocks = capacity in tokens).",
            "# TYPE vllm:cache_config_info gauge",
            f'vllm:cache_config_info{{block_size="1",num_gpu_blocks="{cap}"}} 1',
            "# TYPE vllm:num_preemptions_total counter",
            f"vllm:num_preemptions_total {snap['num_retractions']}",
            "# TYPE sglang:num_running_reqs gauge",
            f"sglang:num_running_reqs {snap['num_running_reqs']}",
            "# TYPE sglang:num_queue_reqs gauge",
            f"sglang:num_queue_reqs {snap['num_waiting_reqs']}",
            "# TYPE sglang:num_used_tokens gauge",
            f"sglang:num_used_tokens {snap['kv_tokens_in_use']}",
            "# TYPE sglang:num_retracted_reqs counter",
            f"sglang:num_retracted_reqs {snap['num_retractions']}",
            "# TYPE sglang:num_retracted_requests_total counter",
            f"sglang:num_retracted_requests_total {snap['num_retractions']}",
            "# TYPE sglang:max_total_num_tokens gauge",
            f"sglang:max_total_num_tokens {cap}",
            "# TYPE sglang:token_usage gauge",
            f"sglang:token_usage {snap['kv_tokens_in_use'] / cap:.4f}",
            "# TYPE rstar_engine_generated_tokens_total counter",
            f"rstar_engine_generated_tokens_total {snap['generated_tokens']}",
            "# TYPE rstar_engine_prefill_tokens_total counter",
            f"rstar_engine_prefill_tokens_total {snap['prefill_tokens']}",
            "# TYPE rstar_engine_retracted_tokens_total counter",
            f"rstar_engine_retracted_tokens_total {snap['num_retracted_tokens']}",
            "# TYPE rstar_engine_decode_steps_total counter",
            f"rstar_engine_decode_steps_total {snap['decode_steps']}",
            "# TYPE rstar_engine_prefill_batches_total counter",
            f"rstar_engine_prefill_batches_total {snap['prefill_batches']}",
        ]
        return "\n".join(lines) + "\n"

    # -------------------------------------------------------------- vLLM

    def completions(self, h, body: dict):
        if body.get("stream"):
            raise RequestError("stream is not supported by the reference engine (send stream: false)", "stream")
        if body.get("n", 1) != 1:
            raise RequestError("n must be 1 on the reference engine", "n")
        if body.get("echo"):
            raise RequestError("echo is not supported by the reference engine", "echo")
        p = body.get("prompt")
        if p is None:
            raise RequestError("prompt is required (token ids or text)", "prompt")
        batched = isinstance(p, list) and len(p) > 0 and isinstance(p[0], (list, str))
        inputs = p if batched else [p]
        prompts = [_prompt(x, f"prompt[{i}]" if batched else "prompt", self.tok) for i, x in enumerate(inputs)]
        lp = body.get("logprobs")
        if lp is not None and (isinstance(lp, bool) or not isinstance(lp, int) or lp < 0):
            raise RequestError("logprobs must be a non-negative integer or null", "logprobs")
        cid = f"cmpl-{next(_ids)}"
        params = []
        for i in range(len(prompts)):
            sp = parse_sampling(body, "", max_new_key="max_tokens", seed_keys=("seed",), default_max_new=16)
            if sp.seed is not None:
                sp.seed += i
            params.append(sp)
        reqs = [self.sched.submit(f"{cid}-{i}", ids, sp) for i, (ids, sp) in enumerate(zip(prompts, params))]
        _wait(h, self.sched, reqs)
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        tok_str = (lambda t: f"token_id:{t}") if as_ids else (lambda t: self.tok.decode([t]))
        choices = []
        for i, (r, ids, sp) in enumerate(zip(reqs, prompts, params)):
            fin = r.finish or {}
            fr = fin.get("type", "stop")
            entry = {
                "index": i,
                "text": self._text(r, sp.skip_special_tokens, False),
                "finish_reason": fr,
                "stop_reason": fin.get("matched") if fr == "stop" and fin.get("matched") not in self.sched.eos_ids else None,
            }
            if lp is not None:
                toks = [tok_str(t) for t in r.output]
                offs, off = [], 0
                for t in r.output:
                    offs.append(off)
                    off += len(self.tok.decode([t]))
                entry["logprobs"] = {"tokens": toks, "token_logprobs": r.logprobs, "top_logprobs": [{s: v} for s, v in zip(toks, r.logprobs)] if lp else None, "text_offset": offs}
            else:
                entry["logprobs"] = None
            if body.get("return_token_ids"):
                entry["token_ids"] = r.output
                entry["prompt_token_ids"] = ids
            if body.get("prompt_logprobs") is not None:
                # vLLM's shape: one {"<token id>": {logprob, rank, decoded_token}} per prompt token, None first.
                plp = prompt_logprobs(self.sched.runner, ids, 0)
                entry["prompt_logprobs"] = [None if lp is None else {str(t): {"logprob": lp, "rank": None, "decoded_token": self.tok.decode([t])}} for lp, t in zip(plp, ids)]
            choices.append(entry)
        n_prompt = sum(len(x) for x in prompts)
        n_out = sum(len(r.output) for r in reqs)
        send(h, 200, {"id": cid, "object": "text_completion", "created": int(time.time()), "model": self.name, "choices": choices,
                      "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out}})

    # ------------------------------------------------------------ routing

    def handler(self):
        app = self

        class Handler(QuietHandler):
            def _route(self, method: str):
                try:
                    path = "/" + "/".join(path_parts(self))
                    s = app.sched
                    if method == "GET":
                        if path in ("/health", "/health_generate", "/health/live", "/health/ready"):
                            return send(self, 200, "", "text/plain")
                        if path in ("/get_server_info", "/server_info"):
                            return send(self, 200, app.server_info())
                        if path in ("/get_model_info", "/model_info"):
                            return send(self, 200, app.model_info())
                        if path == "/get_weight_version":
                            return send(self, 200, {"weight_version": s.weight_version, "manifest_hash": s.manifest_hash})
                        if path == "/metrics":
                            return send(self, 200, app.metrics(), "text/plain; version=0.0.4")
                        if path == "/v1/models":
                            return send(self, 200, {"object": "list", "data": [{"id": app.name, "object": "model", "owned_by": "rstar", "root": s.model_path, "max_model_len": s.context}]})
                        if path == "/flush_cache":
                            return send(self, 200, "Cache flushed.", "text/plain")
                    if path in ("/release_memory_occupation", "/resume_memory_occupation"):
                        return app.occupation(self, path, read_body(self) if method == "POST" else {})
                    if method == "POST":
                        if path == "/generate":
                            return app.generate(self, read_body(self))
                        if path == "/v1/completions":
                            return app.completions(self, read_body(self))
                        if path == "/abort_request":
                            return app.abort_request(self, read_body(self))
                        if path == "/update_weights_from_disk":
                            return app.update_weights(self, read_body(self))
                        if path in WEIGHT_ROUTES:
                            res = WEIGHT_ROUTES[path](app.receiver, read_body(self))
                            return send(self, 200 if res.get("success") else 400, res)
                        if path in ("/flush_cache", "/reset_prefix_cache"):
                            read_body(self)
                            return send(self, 200, "Cache flushed.", "text/plain")
                    raise NotFoundError(f"no route {method} {path}", "path")
                except Exception as e:  # noqa: BLE001 - every error becomes a JSON answer
                    send_error(self, e)

            def do_GET(self):  # noqa: N802
                self._route("GET")

            def do_POST(self):  # noqa: N802
                self._route("POST")

        return Handler


def _vllm_init(r: WeightReceiver, body: dict) -> dict:
    info = body.get("init_info")
    if not isinstance(info, dict):
        raise RequestError("init_info must be an object {master_address, master_port, rank_offset, world_size}", "init_info")
    return r.init_group({**info, "group_name": VLLM_GROUP})


def _vllm_update(r: WeightReceiver, body: dict) -> dict:
    info = body.get("update_info")
    if not isinstance(info, dict):
        raise RequestError("update_info must be an object {names, dtype_names, shapes}", "update_info")
    return r.update({**info, "group_name": VLLM_GROUP}, dtypes_key="dtype_names")


# POST routes of weight updates over torch.distributed (engine/weight_update.py): SGLang's and vLLM's.
WEIGHT_ROUTES = {
    "/init_weights_update_group": lambda r, b: r.init_group(b),
    "/update_weights_from_distributed": lambda r, b: r.update(b),
    "/destroy_weights_update_group": lambda r, b: r.destroy_group(b),
    "/init_weight_transfer_engine": _vllm_init,
    "/start_weight_update": lambda r, b: {"success": True, "message": "ready for a weight update"},
    "/update_weights": _vllm_update,
    "/finish_weight_update": lambda r, b: {"success": True, "message": "weight update finished"},
}


def default_name(model_dir: str) -> str:
    return os.path.basename(os.path.normpath(model_dir)) or "rstar-reference"
