#!/usr/bin/env bash
# GPU check of the trainer worker's step on one GPU, with a random-initialised Qwen2 of Qwen2.5-0.5B's shape
# (24 layers, hidden 896, vocab 151936; no download):
#   1. packed vs padded: the worker's packed micro-batch (flash-attention varlen where `flash_attn` is installed,
#      else SDPA with the block mask) against a padded [B, L] batch — loss and gradients in fp32 (TF32 off; SDPA,
#      flash-attention has no fp32) and, for information, in bf16 (flash varlen when installed); peak memory of each;
#   2. bf16 training tokens/s, MFU and peak memory of `train_step` (one process);
#   3. the same with 2 processes on the one GPU under torchrun (FSDP2 + sharded loading over gloo, since NCCL
#      refuses two ranks on one GPU); reported as "did not fit" when it fails, with the reason.
# Every result is one JSON line; the last line sums them up. Exit 1 when check 1 fails or check 2 cannot run.
#
#   NVIDIA: bash workers/setup.sh && bash workers/gpu-check/trainer-check.sh
#   AMD (ROCm image, its own torch): pip install --no-deps 'transformers>=5.17' safetensors tokenizers, then
#           RSTAR_WORKERS_PYTHON=python3 bash workers/gpu-check/trainer-check.sh
#   No GPU (the same code paths on a tiny model, fp32): RSTAR_CHECK_DEVICE=cpu bash workers/gpu-check/trainer-check.sh
#
# Knobs: SEQ (tokens per sequence, default 4096), SEQUENCES (8), MICRO_TOKENS (packed tokens per micro-batch,
# 16384), STEPS (3), RSTAR_GPU_CHECK_DIR (work dir, the model is kept there for reruns).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/workers/gpu-check"
py="${RSTAR_WORKERS_PYTHON:-$root/workers/.venv/bin/python}"
[ -x "$py" ] || py="$(command -v python3)"
work="${RSTAR_GPU_CHECK_DIR:-$root/.rstar/gpu-check}"
device="${RSTAR_CHECK_DEVICE:-cuda}"
mkdir -p "$work"
export PYTHONPATH="$root/workers/trainer${PYTHONPATH:+:$PYTHONPATH}"
if [ "$device" = cpu ]; then
  config=tiny; dtype=fp32; seq="${SEQ:-256}"; sequences="${SEQUENCES:-4}"; micro="${MICRO_TOKENS:-512}"; steps="${STEPS:-1}"; lengths="100,300,200,257"
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
else
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || {
    echo "trainer-check.sh: torch in $py sees no GPU (CUDA or ROCm); RSTAR_CHECK_DEVICE=cpu runs the CPU paths" >&2; exit 1; }
  config=qwen2-0.5b; dtype=bf16; seq="${SEQ:-4096}"; sequences="${SEQUENCES:-8}"; micro="${MICRO_TOKENS:-16384}"; steps="${STEPS:-3}"; lengths="512,2048,1024,3000"
fi
bench=(--config "$config" --device "$device" --seq "$seq" --sequences "$sequences" --micro-batch 64 --micro-batch-tokens "$micro"
  --steps "$steps" --work-dir "$work" --gradient-checkpointing)
# The model directory gpu_bench.py builds (fp32 for the exact comparison; the bf16 run casts on load).
"$py" "$root/workers/trainer/bench/gpu_bench.py" "${bench[@]}" --dtype fp32 --build-only >"$work/build.log" 2>&1 || {
  echo "trainer-check.sh: building the model failed:" >&2; tail -20 "$work/build.log" >&2; exit 1; }
model="$work/rstar-gpu-bench-$config/model"

status=0
echo "== 1. packed vs padded ($device, fp32)" >&2
packing=$("$py" "$here/trainer_packing_check.py" --model "$model" --device "$device" --dtype fp32 --lengths "$lengths" | tail -1) || status=1
echo "$packing"
if [ "$device" != cpu ]; then
  # bf16 (flash-attention varlen when flash_attn is installed): informational, the kernels round differently.
  echo "== 1b. packed vs padded ($device, bf16; informational)" >&2
  "$py" "$here/trainer_packing_check.py" --model "$model" --device "$device" --dtype bf16 --lengths "$lengths" | tail -1 || true
fi

echo "== 2. one process, $dtype" >&2
one=$("$py" "$root/workers/trainer/bench/gpu_bench.py" "${bench[@]}" --dtype "$dtype" | tail -1) || { echo "trainer-check.sh: the one-process run failed" >&2; exit 1; }
echo "$one"

echo "== 3. two processes on one device (FSDP2 over gloo), $dtype" >&2
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if two=$(RSTAR_TRAINER_BACKEND=gloo "$py" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port" \
    "$root/workers/trainer/bench/gpu_bench.py" "${bench[@]}" --dtype "$dtype" 2>"$work/two.log" | grep '"bench"' | tail -1) && [ -n "$two" ]; then
  echo "$two"
else
  reason=$(grep -E "Error|error" "$work/two.log" | tail -1 | cut -c1-300 | "$py" -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')
  two="{\"bench\":\"trainer-gpu\",\"world\":2,\"fits\":false,\"reason\":$reason}"
  echo "$two"
fi
"$py" - "$packing" "$one" "$two" <<'EOF'
import json, sys
packing, one, two = (json.loads(a) if a.strip().startswith("{") else None for a in sys.argv[1:])
print(json.dumps({"check": "trainer", "packedEqualsPadded": bool(packing and packing.get("ok")),
                  "gradMaxDiffRelative": packing and packing.get("gradMaxDiffRelative"),
                  "tokensPerSecond": one.get("tokens_per_s"), "mfu": one.get("mfu"), "peakGiB": one.get("max_memory_gib"),
                  "twoProcessesTokensPerSecondPerRank": two.get("tokens_per_s") if two and two.get("fits", True) else None,
                  "twoProcessesPeakGiBPerRank": two.get("max_memory_gib") if two and two.get("fits", True) else None,
                  "twoProcesses": "ran" if two and two.get("fits", True) else (two or {}).get("reason")}))
EOF
exit "$status"
