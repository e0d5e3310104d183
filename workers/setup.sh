#!/usr/bin/env bash
# Installs the trainer worker's Python environment (workers/.venv) from its hash-pinned lock file
# (workers/trainer/requirements.lock: torch from PyPI, ~2.8 GB of wheels on Linux, CUDA libraries
# included; it runs on CPU too). Idempotent: a venv whose lock stamp matches is left alone.
#
#   bash workers/setup.sh                 # create/refresh workers/.venv
#   RSTAR_WORKERS_PYTHON=python3.12 ...   # pick the interpreter (>= 3.11)
#   PIP_CACHE_DIR=~/.cache/pip ...        # CI caches this folder (key: sha256 of requirements.lock)
#
# On AMD (MI300X) do not run this: use the ROCm image's own torch and install only the package with
# `pip install --no-deps -e workers/trainer` plus transformers/safetensors/tokenizers (workers/trainer/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
lock="$here/trainer/requirements.lock"

pick_python() {
  if [ -n "${RSTAR_WORKERS_PYTHON:-}" ]; then echo "$RSTAR_WORKERS_PYTHON"; return; fi
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}" c
  for c in python3.12 python3.13 python3.11 "$pyenv_root"/versions/3.12*/bin/python3 "$pyenv_root"/versions/3.13*/bin/python3 \
    "$pyenv_root"/versions/3.11*/bin/python3 python3; do
    if "$c" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 15)))' >/dev/null 2>&1; then echo "$c"; return; fi
  done
  echo "workers/setup.sh: no Python 3.11-3.14 found; set RSTAR_WORKERS_PYTHON" >&2
  exit 1
}

stamp="$(sha256sum "$lock" "$here/trainer/pyproject.toml" | sha256sum | cut -c1-16)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.rstar-lock" 2>/dev/null)" = "$stamp" ]; then
  echo "workers/setup.sh: $venv is up to date ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
  exit 0
fi
py="$(pick_python)"
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# --require-hashes: every wheel must match the lock, so a CI cache or mirror cannot slip in another build.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$lock"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$here/trainer"
echo "$stamp" > "$venv/.rstar-lock"
echo "workers/setup.sh: ready ($("$venv/bin/python" -c 'import sys, torch, transformers; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}")'))"
