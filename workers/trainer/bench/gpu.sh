#!/usr/bin/env bash
# bf16 training tokens/s and MFU of the trainer worker's step on a ~0.5B random-initialised Qwen2
# (Qwen2.5-0.5B's shape, no download) on one GPU. Arguments go to gpu_bench.py (--seq, --sequences,
# --micro-batch, --steps, --gradient-checkpointing, --peak-tflops).
#
#   NVIDIA: bash workers/setup.sh && bash workers/trainer/bench/gpu.sh
#   AMD (ROCm image, its own torch): pip install --no-deps 'transformers>=5.17' safetensors tokenizers
#           then RSTAR_WORKERS_PYTHON=python3 bash workers/trainer/bench/gpu.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
py="${RSTAR_WORKERS_PYTHON:-$root/workers/.venv/bin/python}"
[ -x "$py" ] || py="$(command -v python3)"
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || {
  echo "gpu.sh: torch ($("$py" -c 'import torch; print(torch.__version__)')) sees no GPU (CUDA or ROCm)" >&2
  exit 1
}
export PYTHONPATH="$root/workers/trainer${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" "$here/gpu_bench.py" "$@"
