#!/usr/bin/env bash
# GPU check of weight sync (docs/deploy.md "Weight sync"): a random ~0.5B Qwen2 (Qwen2.5-0.5B's shape, the
# make-tiny tokenizer; no download), the trainer worker (bf16) and a pip-installed SGLang (bf16) on it; one
# GRPO step on SGLang's samples, then the new weights into SGLang from disk and over torch.distributed, each
# followed by the behaviour probe (workers/gpu-check/weights_check.py). Prints seconds per GB of each path,
# both probes and the step-0 drift; exits non-zero when a probe or the drift is beyond tolerance.
# About 5-8 minutes on one H100/H200 (model build ~1 min, SGLang start ~1-2 min).
#
# One GPU: trainer and SGLang share it; NCCL refuses two ranks of one group on one GPU, so the group is gloo
# (CUDA tensors staged through host memory: slower than NCCL, still no disk). Two or more GPUs: SGLang on
# GPU 1 and nccl (RCCL on ROCm). Override with RSTAR_WS_BACKEND=gloo|nccl.
#
#   bash workers/setup.sh && pip install "sglang[all]" (same env, same torch), then
#   SGLANG_PYTHON=/path/to/python bash workers/gpu-check/weights-check.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
py="${RSTAR_WORKERS_PYTHON:-$root/workers/.venv/bin/python}"
sg_py="${SGLANG_PYTHON:-$py}"
work="${RSTAR_GPU_CHECK_DIR:-$root/.rstar/gpu-weights-check}"
trainer_port="${TRAINER_PORT:-31000}"
engine_port="${ENGINE_PORT:-30000}"
master_port="${RSTAR_WS_MASTER_PORT:-29650}"
mkdir -p "$work"
gpus="$("$py" -c 'import torch; print(torch.cuda.device_count())')"
[ "$gpus" -ge 1 ] || { echo "weights-check.sh: torch in $py sees no GPU (CUDA or ROCm)" >&2; exit 1; }
if [ "$gpus" -ge 2 ]; then backend="${RSTAR_WS_BACKEND:-nccl}"; sg_gpu=1; mem=0.8; else backend="${RSTAR_WS_BACKEND:-gloo}"; sg_gpu=0; mem=0.45; fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_http() { # url, name, pid
  for _ in $(seq 1 600); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    kill -0 "$3" 2>/dev/null || { echo "weights-check.sh: $2 exited (log in $work)" >&2; tail -30 "$work/$2.log" >&2; exit 1; }
    sleep 1
  done
  echo "weights-check.sh: $2 did not answer $1 within 600 s" >&2; exit 1
}

model="$work/qwen2-0.5b-random"
if [ ! -f "$model/config.json" ]; then
  PYTHONPATH="$root/workers/trainer" "$py" -m rstar_trainer make-tiny --out "$model" --hidden-size 896 --layers 24 \
    --heads 14 --kv-heads 2 --intermediate-size 4864 --vocab-size 2048 --max-positions 4096
fi
rm -rf "$work/trainer" "$work/checkpoints"
CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$root/workers/trainer" "$py" -m rstar_trainer serve --model "$model" --port "$trainer_port" \
  --device cuda --dtype bf16 --state-dir "$work/trainer" --checkpoint-root "$work/checkpoints" >"$work/trainer.log" 2>&1 &
pids+=($!)
CUDA_VISIBLE_DEVICES="$sg_gpu" "$sg_py" -m sglang.launch_server --model-path "$model" --port "$engine_port" --dtype bfloat16 \
  --mem-fraction-static "$mem" >"$work/sglang.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$trainer_port/healthz" trainer "${pids[0]}"
wait_http "http://127.0.0.1:$engine_port/health" sglang "${pids[1]}"
PYTHONPATH="$root/workers/trainer" "$py" "$root/workers/gpu-check/weights_check.py" --trainer "http://127.0.0.1:$trainer_port" \
  --engine "http://127.0.0.1:$engine_port" --work "$work" --backend "$backend" --master-port "$master_port" \
  --probe-tol "${RSTAR_WS_PROBE_TOL:-0.15}" --drift-max "${RSTAR_GPU_DRIFT_MAX:-0.5}"
