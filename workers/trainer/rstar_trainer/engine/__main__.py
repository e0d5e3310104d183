"""``python -m rstar_trainer.engine serve --model DIR --port 30000 --kv-capacity-tokens N``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rstar_trainer.engine", description="rstar reference engine (SGLang + vLLM routes)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--model", required=True, help="Hugging Face model directory (with its tokenizer)")
    s.add_argument("--port", type=int, default=int(os.environ.get("RSTAR_ENGINE_PORT", "30000")), help="0 = any free port (printed)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--kv-capacity-tokens", type=int, default=65536, help="max_total_num_tokens: KV cache capacity in tokens")
    s.add_argument("--max-running-requests", type=int, default=64)
    s.add_argument("--max-prefill-tokens", type=int, default=16384)
    s.add_argument("--admission", default="sglang", choices=["sglang", "reserve"], help="sglang: optimistic admission, retract on overflow; reserve: reserve prompt+max_new, never retract")
    s.add_argument("--init-new-token-ratio", type=float, default=0.7)
    s.add_argument("--min-new-token-ratio", type=float, default=0.1)
    s.add_argument("--device", default="auto")
    s.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16")
    s.add_argument("--served-model-name", default=None)
    s.add_argument("--weight-version", default="default")
    s.add_argument("--return-original-logprob", action="store_true", default=os.environ.get("SGLANG_RETURN_ORIGINAL_LOGPROB", "").lower() in ("1", "true"),
                   help="report logprobs of the raw logits (before temperature), like SGLANG_RETURN_ORIGINAL_LOGPROB")
    s.add_argument("--threads", type=int, default=0)
    return p


def serve(args) -> int:
    import torch

    from ..distributed import pick_device
    from ..errors import RstarWorkerError
    from ..http_util import JsonServer
    from ..model_io import validate_model_dir
    from ..policy import quiet_transformers, resolve_dtype
    from .runner import Runner
    from .scheduler import Scheduler
    from .server import EngineApp, default_name

    quiet_transformers()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        validate_model_dir(args.model)
        device = pick_device(args.device, int(os.environ.get("LOCAL_RANK", "0")))
        dtype = resolve_dtype(args.dtype, device)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(args.model)
        runner = Runner(args.model, device, dtype)
        sched = Scheduler(
            runner, tok, capacity=args.kv_capacity_tokens, max_running=args.max_running_requests, max_prefill_tokens=args.max_prefill_tokens,
            policy=args.admission, init_ratio=args.init_new_token_ratio, min_ratio=args.min_new_token_ratio,
            original_logprob=args.return_original_logprob, model_path=os.path.abspath(args.model), weight_version=args.weight_version,
        )
    except RstarWorkerError as e:
        print(json.dumps({"error": e.to_json()}), file=sys.stderr, flush=True)
        return 2
    app = EngineApp(sched, tok, served_model_name=args.served_model_name or default_name(args.model), device=str(device), dtype=str(dtype).replace("torch.", ""))
    httpd = JsonServer((args.host, args.port), app.handler())
    sched.start()

    def on_signal(_sig, _frm):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    port = httpd.server_address[1]
    print(json.dumps({"event": "listening", "url": f"http://{args.host}:{port}", "port": port, "device": str(device), "kvCapacityTokens": args.kv_capacity_tokens}), flush=True)
    httpd.serve_forever(poll_interval=0.2)
    sched.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
