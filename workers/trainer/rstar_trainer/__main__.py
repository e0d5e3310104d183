"""Command line: ``python -m rstar_trainer serve|make-tiny``."""

from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rstar_trainer", description="rstar trainer worker")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the trainer HTTP API (run under torchrun for FSDP2 across GPUs)")
    s.add_argument("--model", required=True, help="Hugging Face model directory the runs start from (with its tokenizer)")
    s.add_argument("--port", type=int, default=int(os.environ.get("RSTAR_TRAINER_PORT", "31000")), help="0 = any free port (printed)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--state-dir", default=os.environ.get("RSTAR_TRAINER_STATE", ".rstar/trainer"), help="step results, version index, optimizer states")
    s.add_argument("--checkpoint-root", default=None, help="where checkpoints go (a volume the engines mount); default STATE_DIR/checkpoints")
    s.add_argument("--device", default="auto", help="auto | cpu | cuda (cuda also means ROCm/HIP)")
    s.add_argument("--dtype", default="auto", help="compute dtype: auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16")
    s.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    t = sub.add_parser("make-tiny", help="build the hf-tiny model: a tiny Qwen2 and a byte-level BPE tokenizer, offline")
    t.add_argument("--out", required=True)
    t.add_argument("--corpus", action="append", default=[], help="text file(s) to train the tokenizer on (added to the built-in corpus)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--vocab-size", type=int, default=2048)
    t.add_argument("--hidden-size", type=int, default=96)
    t.add_argument("--layers", type=int, default=2)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--kv-heads", type=int, default=2)
    t.add_argument("--intermediate-size", type=int, default=256)
    t.add_argument("--max-positions", type=int, default=4096)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "serve":
        import json

        from .errors import RstarWorkerError
        from .model_io import validate_model_dir

        # Checked before torch is imported, so a wrong path fails in well under a second.
        try:
            validate_model_dir(args.model)
        except RstarWorkerError as e:
            print(json.dumps({"error": e.to_json()}), file=sys.stderr, flush=True)
            return 2
        from .server import serve

        return serve(args)
    if args.cmd == "make-tiny":
        from .tiny import make_tiny_cli

        return make_tiny_cli(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
