#!/usr/bin/env bash
# GPU check of the parts CPU CI cannot reach: a real SGLang server and the trainer worker on a GPU, driven by
# `rstar train` (policy.kind hf). It builds a ~0.5B random-initialised Qwen2 (Qwen2.5-0.5B's shape, the
# make-tiny byte-level BPE tokenizer; no download), starts the trainer worker (bf16 on the GPU) and SGLang on
# it, then runs a short SFT + GRPO-RoC run whose every step verifies weight sync (update_weights_from_disk
# with the policy version as weight_version, GET /get_weight_version before sampling, the weight version of
# every generation; a mismatch fails the run). It prints each step's engine/trainer logprob drift and exits
# non-zero when the run fails or step 0's drift exceeds RSTAR_GPU_DRIFT_MAX (default 0.5: bf16 kernels of
# SGLang and PyTorch differ; on CPU fp32 the same check holds to 1e-4, test/e2e/train-hf-tiny.e2e.spec.ts).
#
#   NVIDIA: bash workers/setup.sh && pip install sglang (into an env with the same torch), then
#           SGLANG_PYTHON=/path/to/python bash workers/gpu-check/sglang-check.sh
#   AMD MI300X (SGLang ROCm image, its own torch): pip install --no-deps -e workers/trainer plus
#           transformers/safetensors/tokenizers, then
#           RSTAR_WORKERS_PYTHON=python3 SGLANG_PYTHON=python3 bash workers/gpu-check/sglang-check.sh
#   A running SGLang on the same model instead: SGLANG_URL=http://host:30000 MODEL_DIR=/shared/model ...
#   (MODEL_DIR must be readable by both, and by the engine the trainer's checkpoint root below it.)
#
# Needs node/pnpm (`pnpm install`) and the sandbox's .venv (`bash infra/local/setup.sh`) for the tool calls.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
py="${RSTAR_WORKERS_PYTHON:-$root/workers/.venv/bin/python}"
sg_py="${SGLANG_PYTHON:-$py}"
work="${RSTAR_GPU_CHECK_DIR:-$root/.rstar/gpu-check}"
trainer_port="${TRAINER_PORT:-31000}"
engine_port="${ENGINE_PORT:-30000}"
mkdir -p "$work"
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || {
  echo "sglang-check.sh: torch in $py sees no GPU (CUDA or ROCm)" >&2; exit 1; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_http() { # url, name, pid
  for _ in $(seq 1 600); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || { echo "sglang-check.sh: $2 exited (log in $work)" >&2; exit 1; }
    sleep 1
  done
  echo "sglang-check.sh: $2 did not answer $1 within 600 s" >&2; exit 1
}

model="${MODEL_DIR:-$work/qwen2-0.5b-random}"
if [ ! -f "$model/config.json" ]; then
  PYTHONPATH="$root/workers/trainer" "$py" -m rstar_trainer make-tiny --out "$model" --hidden-size 896 --layers 24 \
    --heads 14 --kv-heads 2 --intermediate-size 4864 --vocab-size 2048 --max-positions 4096
fi
PYTHONPATH="$root/workers/trainer" "$py" -m rstar_trainer serve --model "$model" --port "$trainer_port" --device cuda --dtype bf16 \
  --state-dir "$work/trainer" --checkpoint-root "$work/checkpoints" >"$work/trainer.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$trainer_port/healthz" "trainer worker" "${pids[-1]}"
engine_url="${SGLANG_URL:-}"
if [ -z "$engine_url" ]; then
  "$sg_py" -m sglang.launch_server --model-path "$model" --port "$engine_port" --mem-fraction-static 0.5 >"$work/sglang.log" 2>&1 &
  pids+=($!)
  engine_url="http://127.0.0.1:$engine_port"
  wait_http "$engine_url/health" "SGLang" "${pids[-1]}"
fi
cat >"$work/run.yaml" <<YAML
name: gpu-sglang-check
seed: 1
policy: { kind: hf, path: "$model", prompt: compact }
data: { source: tasks, trainSize: 256, heldOutSize: 32 }
sft: { steps: 40, batchSize: 32, lr: 0.0003, warmupSteps: 4, updatesPerRequest: 20 }
stages:
  - { name: rl-1, steps: 4, promptsPerStep: 16, groupSize: 4, oversample: 2, maxResponseTokens: 256, maxTurns: 3, temperature: 1.0, lr: 0.00001 }
trainer: { kind: worker, url: "http://127.0.0.1:$trainer_port", warmupSteps: 1, miniBatch: 16, microBatch: 8 }
engines: [{ kind: sglang, url: "$engine_url" }]
eval: { samples: 1, temperature: 1.0, maxTurns: 3, maxResponseTokens: 256 }
YAML
pnpm rstar train --config "$work/run.yaml" --out "$work/run"
node -e '
  const m = require(process.argv[1]);
  const max = Number(process.env.RSTAR_GPU_DRIFT_MAX ?? 0.5);
  for (const s of m.steps) console.log(JSON.stringify({ step: s.step, logprobDiffMean: s.metrics.logprobDiffMean, logprobDiffMax: s.metrics.logprobDiffMax, mismatchKl: s.metrics.mismatchKl, clipFraction: s.metrics.clipFraction }));
  const d0 = m.steps.find((s) => s.step === 0)?.metrics.logprobDiffMax;
  if (typeof d0 !== "number" || !(d0 <= max)) { console.error(`step 0 logprob drift ${d0} > RSTAR_GPU_DRIFT_MAX ${max}`); process.exit(1); }
  console.log(JSON.stringify({ check: "sglang", policyVersion: m.policyVersion, steps: m.steps.length, step0LogprobDiffMax: d0 }));
' "$work/run/report/metrics.json"
