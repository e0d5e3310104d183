#!/usr/bin/env bash
# One-time setup of a fresh machine (Debian/Ubuntu, as root, or with the system packages already present):
# system packages (Postgres, NATS, bubblewrap), pnpm + node modules, and the sandbox's Python venv (.venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash infra/local/install.sh
if ! command -v pnpm >/dev/null || [ "$(pnpm --version 2>/dev/null)" != "12.4.2" ]; then
  npm install -g pnpm@12.4.2 >/dev/null 2>&1 || corepack enable
fi
pnpm install --frozen-lockfile --reporter=silent
py="${RSTAR_SETUP_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$py" -m venv .venv; fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r infra/python/requirements.txt
echo "setup.sh: ready (node $(node --version), pnpm $(pnpm --version), $(.venv/bin/python --version))"
