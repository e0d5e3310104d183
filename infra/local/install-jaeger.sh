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
t0=$(date +%s)
mkdir -p "$bin"
# Jaeger's go.mod needs Go >= 1.24.6; Debian 12's golang-go is 1.19. Without a recent enough go, the Go
# toolchain module (golang.org/toolchain, what GOTOOLCHAIN itself downloads) is fetched from the Go proxy
# into $RSTAR_TOOLS_DIR/go-toolchain.
go_ok() { command -v go >/dev/null && go version | awk '{v=$3; sub(/^go/,"",v); split(v,a,"."); exit !(a[1]>1 || (a[1]==1 && (a[2]>24 || (a[2]==24 && a[3]>=6))))}'; }
if ! go_ok; then
  tc="$RSTAR_TOOLS_DIR/go-toolchain"
  if [ ! -x "$tc/bin/go" ]; then
    case "$(uname -m)" in x86_64) arch=amd64;; aarch64|arm64) arch=arm64;; *) echo "install-jaeger.sh: no Go toolchain for $(uname -m)" >&2; exit 1;; esac
    command -v curl >/dev/null && command -v unzip >/dev/null || { echo "install-jaeger.sh: curl and unzip are required to fetch Go" >&2; exit 1; }
    echo "install-jaeger.sh: fetching Go $GO_TOOLCHAIN_VERSION from ${GOPROXY_URL:-https://proxy.golang.org}"
    tmp="$(mktemp -d)"
    curl -fsSL -o "$tmp/go.zip" "${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/v0.0.1-go$GO_TOOLCHAIN_VERSION.linux-$arch.zip"
    unzip -q "$tmp/go.zip" -d "$tmp"
    rm -rf "$tc"; mv "$tmp/golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN_VERSION.linux-$arch" "$tc"; rm -rf "$tmp"
    chmod +x "$tc"/bin/* "$tc"/pkg/tool/*/* 2>/dev/null || true
  fi
  export PATH="$tc/bin:$PATH" GOROOT="$tc"
  go_ok || { echo "install-jaeger.sh: $tc/bin/go is not Go >= 1.24.6" >&2; exit 1; }
fi
export GOMODCACHE="$RSTAR_TOOLS_DIR/go/mod" GOCACHE="$RSTAR_TOOLS_DIR/go/build" GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
src="$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$src" ] || { echo "install-jaeger.sh: could not download github.com/jaegertracing/jaeger@$JAEGER_VERSION" >&2; exit 1; }
(cd "$src" && go build -trimpath -o "$bin/jaeger" ./cmd/jaeger)
echo "$JAEGER_VERSION" > "$bin/.version"
# Only the binary is worth keeping (CI caches $RSTAR_TOOLS_DIR): the build and module caches are ~3 GB.
go clean -cache -modcache
echo "install-jaeger.sh: jaeger $JAEGER_VERSION in $bin ($(( $(date +%s) - t0 )) s)"
