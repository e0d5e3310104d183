#!/usr/bin/env bash
# One-time setup of a fresh machine (Debian/Ubuntu, as root, or with the system packages already present).
#   bash infra/local/setup.sh train   what the main job (`pnpm rstar train`, built-in policy) needs: bubblewrap,
#                                     pnpm + node modules, the sandbox's venv (.venv). Nothing else.
#   bash infra/local/setup.sh         everything the tests need as well:
# system packages (Postgres, NATS, bubblewrap, Java, Maven, chromium), pnpm + node modules, the sandbox's
# Python venv (.venv), the infrastructure tests' tools (.tools: hadolint, kustomize, the operators' published
# CRDs), Kafka's jars and a Jaeger binary under $RSTAR_TOOLS_DIR (the tracing and export tests), the tracker tests' venv
# (.venv-trackers: mlflow, wandb) and the trainer worker's (workers/.venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# `train` (or the older RSTAR_SETUP_ONLY=train) installs only the main job's needs.
scope="${1:-${RSTAR_SETUP_ONLY:-all}}"
case "$scope" in train|all) ;; *) echo "setup.sh: unknown argument \"$scope\"; use \"train\" (the main job only) or nothing (everything)" >&2; exit 2;; esac
bash infra/local/install.sh "$scope"
if ! command -v pnpm >/dev/null || [ "$(pnpm --version 2>/dev/null)" != "12.4.2" ]; then
  npm install -g pnpm@12.4.2 >/dev/null 2>&1 || corepack enable
fi
pnpm install --frozen-lockfile --reporter=silent
# The sandbox's Python: CPython >= 3.12 where the machine has one (the zygote marks its imported heap
# immortal, PEP 683, so a call's fork copies far fewer pages: libs/sandbox/README.md), else python3.
# RSTAR_SETUP_PYTHON picks one explicitly.
pick_python() {
  if [ -n "${RSTAR_SETUP_PYTHON:-}" ]; then echo "$RSTAR_SETUP_PYTHON"; return; fi
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}" c
  for c in python3.12 python3.13 "$pyenv_root"/versions/3.12*/bin/python3 "$pyenv_root"/versions/3.13*/bin/python3; do
    if "$c" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' >/dev/null 2>&1; then echo "$c"; return; fi
  done
  echo python3
}
py="$(pick_python)"
want="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
have="$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
  [ -z "$have" ] || echo "setup.sh: .venv has Python $have; recreating it with $py (Python $want)"
  rm -rf .venv
  "$py" -m venv .venv
fi
case "$want" in 3.1[2-9]) ;; *) echo "setup.sh: NOTE: the sandbox runs on Python $want; CPython >= 3.12 makes its calls cheaper (set RSTAR_SETUP_PYTHON)";; esac
.venv/bin/python -m pip install -q --disable-pip-version-check -r infra/python/requirements.txt
# `train` stops here: the built-in policy's `rstar train` needs only the node modules and the sandbox's venv;
# what follows (~10 minutes on a fresh machine) is for the tests and the Hugging Face path.
if [ "$scope" = train ]; then
  echo "setup.sh: ready for rstar train (node $(node --version), pnpm $(pnpm --version), $(.venv/bin/python --version)); run \`bash infra/local/setup.sh\` (no argument) before the tests"
  exit 0
fi
# Test tools (pytest for the zygote's tests, SandboxFusion's client) live in .venv-dev, same interpreter,
# so the sandbox's own environment (.venv) offers programs nothing extra.
have_dev="$(.venv-dev/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
if [ "$have_dev" != "$want" ]; then rm -rf .venv-dev; "$py" -m venv .venv-dev; fi
.venv-dev/bin/python -m pip install -q --disable-pip-version-check -r infra/python/requirements-dev.txt
# hadolint and kustomize for the Dockerfile and manifest tests (test/infra).
bash infra/local/install-infra-tools.sh
bash infra/local/install-kafka.sh
bash infra/local/install-jaeger.sh
bash infra/local/install-kube-apiserver.sh
# The trainer worker / reference engine (PyTorch, transformers) in workers/.venv, from its hash-pinned lock;
# the hf-tiny e2e, the engine adapter tests and workers' pytest (run by `pnpm test`) need it.
bash workers/setup.sh
# The tracker tests' Python (.venv-trackers): a real MLflow tracking server and the wandb client
# (infra/python/trackers-requirements.txt; ~900 MB, ~7 minutes the first time, skipped when unchanged;
# RSTAR_SETUP_TRACKERS=0 skips it, and then libs/trackers' and the dashboard's tests fail naming this step).
if [ "${RSTAR_SETUP_TRACKERS:-1}" != 0 ] && ! cmp -s infra/python/trackers-requirements.txt .venv-trackers/.requirements 2>/dev/null; then
  rm -rf .venv-trackers
  python3 -m venv .venv-trackers
  .venv-trackers/bin/python -m pip install -q --disable-pip-version-check -r infra/python/trackers-requirements.txt
  cp infra/python/trackers-requirements.txt .venv-trackers/.requirements
fi
echo "setup.sh: ready (node $(node --version), pnpm $(pnpm --version), $(.venv/bin/python --version))"
