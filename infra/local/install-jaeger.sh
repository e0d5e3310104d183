#!/usr/bin/env bash
# Installs Jaeger (all-in-one: OTLP in on 4317/4318, query API and UI on 16686) for tests and local runs:
# the binary of github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION in $RSTAR_TOOLS_DIR/jaeger/bin,
# built with Go's module and build caches under $RSTAR_TOOLS_DIR/go (removed afterwards: ~3 GB); CI keeps
# $RSTAR_TOOLS_DIR between runs, so the build (~10 CPU-minutes) happens once per version.
# Plain `go install pkg@version` refuses this module (its go.mod has replace directives), so the module
# is downloaded through the Go proxy and built inside its own directory, where those directives apply.
# Idempotent: an installed binary of the same version is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
bin="$RSTAR_TOOLS_DIR/jaeger/bin"
if [ -x "$bin/jaeger" ] && [ -f "$bin/.version" ] && [ "$(cat "$bin/.version")" = "$JAEGER_VERSION" ]; then
  echo "install-jaeger.sh: jaeger $JAEGER_VERSION present in $bin"; exit 0
fi
command -v go >/dev/null || { echo "install-jaeger.sh: go (1.24+) is required: https://go.dev/dl or apt-get install golang" >&2; exit 1; }
t0=$(date +%s)
mkdir -p "$bin"
export GOMODCACHE="$RSTAR_TOOLS_DIR/go/mod" GOCACHE="$RSTAR_TOOLS_DIR/go/build" GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
src="$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$src" ] || { echo "install-jaeger.sh: could not download github.com/jaegertracing/jaeger@$JAEGER_VERSION" >&2; exit 1; }
(cd "$src" && go build -trimpath -o "$bin/jaeger" ./cmd/jaeger)
echo "$JAEGER_VERSION" > "$bin/.version"
# Only the binary is worth keeping (CI caches $RSTAR_TOOLS_DIR): the build and module caches are ~3 GB.
go clean -cache -modcache
echo "install-jaeger.sh: jaeger $JAEGER_VERSION in $bin ($(( $(date +%s) - t0 )) s)"
