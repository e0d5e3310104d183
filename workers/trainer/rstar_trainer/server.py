"""``python -m rstar_trainer serve``: the trainer worker's HTTP API.

- ``PUT /v1/runs/{runId}/steps/{step}`` body ``{batchUri, batchHash, policyVersion, loss?, optimizer?,
  mode?: "grpo"|"sft", checkpointDir?, initFrom?, checkpoints?: {every, keepLast?, exportEvery?, final?}}`` -> 202 ``{state: "queued", ...}`` (training runs in
  the background); a repeat with the same ``batchHash`` -> 200 with the stored result (or 202 while it
  is pending); another ``batchHash`` for the same step -> 409 ``step_conflict`` naming both hashes.
- ``GET /v1/runs/{runId}/steps/{step}[?wait=SECONDS]`` -> 200 ``rstar.grpo-result/1`` (``state: "done"``)
  or 200 ``{state: "failed", error}``, 202 ``{state: "queued"|"running"}``, 404 when never PUT; with
  ``wait`` the answer is held until the step ends (long poll, at most 300 s).
- ``GET /v1/runs/{runId}`` -> the run's latest policy version and checkpoint.
- ``POST /v1/weight-sync/group|plan|buckets/{k}``, ``POST /v1/probe``: weights from memory to the engines
  over torch.distributed and the trainer's logprobs of a probe sequence (:mod:`.weight_sync`).
- ``GET /v1/info``, ``GET /healthz`` (also ``/health/live``, ``/health/ready``), ``GET /metrics`` (Prometheus).

Under ``torchrun`` (one node or several: ``--nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT``)
global rank 0 serves this API on ``--host`` and every other rank, on any node, follows its commands.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import threading

import torch

from . import __version__
from .batch import PROTOCOL_V1, PROTOCOL_V2
from .distributed import DistContext, init_context, shutdown
from .errors import NotFoundError, RstarWorkerError
from .http_util import JsonServer, QuietHandler, path_parts, read_body, send, send_error
from .model_io import validate_model_dir
from .policy import PolicyTrainer, quiet_transformers, resolve_dtype
from .service import RESULT_PROTOCOL, StepService, follower_loop
from .weight_sync import WeightSyncService
from .weight_sync import route as weight_sync_route


def info(svc: StepService, trainer: PolicyTrainer, model_dir: str) -> dict:
    cfg = trainer.model.config if trainer.model is not None else None
    return {
        "worker": "rstar-trainer",
        "version": __version__,
        "model": os.path.abspath(model_dir),
        "modelType": getattr(cfg, "model_type", None),
        "architectures": getattr(cfg, "architectures", None),
        "parameters": trainer.num_parameters,
        "vocabSize": trainer.vocab_size,
        "tiedEmbeddings": bool(getattr(cfg, "tie_word_embeddings", False)),
        "tokenizerHash": svc.tokenizer_hash,
        "device": str(svc.ctx.device),
        "deviceName": torch.cuda.get_device_name(svc.ctx.device) if svc.ctx.device.type == "cuda" else platform.processor() or platform.machine(),
        "dtype": svc.dtype_name,
        "masterDtype": "float32",
        "worldSize": svc.ctx.world,
        "nodes": int(os.environ.get("GROUP_WORLD_SIZE", "1")),
        "fsdp": svc.ctx.is_dist,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "python": platform.python_version(),
        "protocols": {"batch": [PROTOCOL_V1, PROTOCOL_V2], "result": RESULT_PROTOCOL},
        "loaded": None if not svc.loaded or svc.loaded[1] < 0 else {"runId": svc.loaded[0], "policyVersion": svc.loaded[1]},
        "busy": svc.busy,
        "stateDir": svc.state_dir,
        "checkpointRoot": svc.checkpoint_root,
    }


def metrics_text(svc: StepService) -> str:
    """Prometheus text exposition (version 0.0.4) of the worker's counters and its last step."""
    c, last = svc.counters, svc.last_step
    lines = []

    def metric(name: str, kind: str, help_: str, value) -> None:
        if value is None:
            return
        lines.extend([f"# HELP rstar_trainer_{name} {help_}", f"# TYPE rstar_trainer_{name} {kind}", f"rstar_trainer_{name} {float(value)!r}"])

    metric("world_size", "gauge", "Ranks (processes) training together, over all nodes.", svc.ctx.world)
    metric("busy", "gauge", "1 while a step is queued or training.", 1 if svc.busy else 0)
    metric("steps_done_total", "counter", "Steps trained and committed since start.", c["steps_done"])
    metric("steps_failed_total", "counter", "Step attempts that failed since start.", c["steps_failed"])
    metric("trained_tokens_total", "counter", "Model tokens of the committed steps since start.", c["trained_tokens"])
    metric("train_seconds_total", "counter", "Seconds spent in forward/backward/update of committed steps.", c["train_seconds"])
    metric("last_step_loss", "gauge", "Token-mean loss of the last committed step.", last.get("loss"))
    metric("last_step_tokens_per_second", "gauge", "Model tokens per training second of the last committed step.", last.get("tokensPerSecond"))
    metric("last_step_grad_norm", "gauge", "Mean pre-clip gradient norm of the last committed step.", last.get("gradNorm"))
    metric("last_step_policy_version", "gauge", "Policy version the last committed step produced.", last.get("newPolicyVersion"))
    return "\n".join(lines) + "\n"


def query_wait(h) -> float:
    """``?wait=SECONDS`` of a GET (long poll), 0 when absent."""
    from urllib.parse import parse_qs, urlparse

    raw = parse_qs(urlparse(h.path).query).get("wait", ["0"])[0]
    try:
        return max(0.0, float(raw))
    except ValueError as e:
        from .errors import RequestError

        raise RequestError(f"wait must be a number of seconds, got {raw!r}", "wait") from e


def make_handler(svc: StepService, trainer: PolicyTrainer, model_dir: str):
    ws = WeightSyncService(svc)

    class Handler(QuietHandler):
        def _route(self, method: str):
            try:
                parts = path_parts(self)
                if method == "GET" and parts in (["healthz"], ["health", "live"], ["health", "ready"]):
                    return send(self, 200, {"status": "ok", "busy": svc.busy})
                if method == "GET" and parts == ["metrics"]:
                    return send(self, 200, metrics_text(svc), "text/plain; version=0.0.4")
                if method == "GET" and parts == ["v1", "info"]:
                    return send(self, 200, info(svc, trainer, model_dir))
                if len(parts) == 5 and parts[:2] == ["v1", "runs"] and parts[3] == "steps":
                    step = svc.check_ids(parts[2], parts[4])
                    if method == "PUT":
                        status, body = svc.put(parts[2], step, read_body(self))
                        return send(self, status, body)
                    if method == "GET":
                        status, body = svc.get(parts[2], step, wait=query_wait(self))
                        return send(self, status, body)
                routed = weight_sync_route(ws, method, parts, lambda: read_body(self))
                if routed is not None:
                    return send(self, *routed)
                if method == "GET" and len(parts) == 3 and parts[:2] == ["v1", "runs"]:
                    svc.check_ids(parts[2], "0")
                    return send(self, 200, svc.run_view(parts[2]))
                raise NotFoundError(f"no route {method} {self.path}", "path")
            except Exception as e:  # noqa: BLE001 - every error becomes a JSON answer
                send_error(self, e)

        def do_GET(self):  # noqa: N802 - http.server's naming
            self._route("GET")

        def do_PUT(self):  # noqa: N802
            self._route("PUT")

        def do_POST(self):  # noqa: N802
            self._route("POST")

    return Handler


def serve(args) -> int:
    """Start the worker; every rank loads the model, rank 0 serves HTTP. Exit code 2 on a bad model
    directory (a JSON error line on stderr)."""
    quiet_transformers()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        validate_model_dir(args.model)
        ctx = init_context(args.device)
    except RstarWorkerError as e:
        print(json.dumps({"error": e.to_json()}), file=sys.stderr, flush=True)
        return 2
    dtype = resolve_dtype(args.dtype, ctx.device)
    trainer = PolicyTrainer(args.model, ctx, dtype)
    try:
        trainer.load(args.model)
    except RstarWorkerError as e:
        print(json.dumps({"error": e.to_json()}), file=sys.stderr, flush=True)
        return 2
    if not ctx.is_main:
        follower_loop(ctx, trainer)
        shutdown(ctx)
        return 0
    state_dir = args.state_dir
    svc = StepService(
        ctx, trainer, base_dir=args.model, state_dir=state_dir,
        checkpoint_root=args.checkpoint_root or os.path.join(state_dir, "checkpoints"),
        dtype_name=str(dtype).replace("torch.", ""),
    )
    httpd = JsonServer((args.host, args.port), make_handler(svc, trainer, args.model))
    svc.start()
    stop = threading.Event()

    def on_signal(_sig, _frm):
        stop.set()
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    port = httpd.server_address[1]
    print(json.dumps({"event": "listening", "url": f"http://{args.host}:{port}", "port": port, "worldSize": ctx.world, "device": str(ctx.device)}), flush=True)
    httpd.serve_forever(poll_interval=0.2)
    svc.stop()
    if ctx.is_dist:
        ctx.broadcast({"op": "exit"})
    shutdown(ctx)
    return 0
