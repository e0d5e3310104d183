#!/usr/bin/env bash
# Installs a real kube-apiserver (and Debian's etcd) for the manifest test's server-side dry-run
# (test/infra/k8s-dry-run.int.spec.ts): the binary of k8s.io/kubernetes/cmd/kube-apiserver at
# $KUBE_APISERVER_VERSION in $RSTAR_TOOLS_DIR/kube-apiserver/bin, built with Go (~12 CPU-minutes) in a throwaway
# module. `go install k8s.io/kubernetes/...@v1.x` is refused (its go.mod replaces the k8s.io/* libraries with
# ./staging folders that its module zip does not carry), so the build module requires k8s.io/kubernetes and
# points each of those libraries at its published release (v0.<minor>.<patch>, cut from the same staging tree).
# Module and build caches live under $RSTAR_TOOLS_DIR/go-kas and are removed afterwards (~2 GB); RSTAR_GOCACHE
# names a build cache to reuse instead (a warm one makes a rebuild take about a minute).
# Idempotent: an installed binary of the same version is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
bin="$RSTAR_TOOLS_DIR/kube-apiserver/bin"
if [ -x "$bin/kube-apiserver" ] && [ "$(cat "$bin/.version" 2>/dev/null)" = "$KUBE_APISERVER_VERSION" ]; then
  echo "install-kube-apiserver.sh: kube-apiserver $KUBE_APISERVER_VERSION present in $bin"; exit 0
fi
command -v etcd >/dev/null || [ -x /usr/bin/etcd ] || {
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  else echo "install-kube-apiserver.sh: etcd is missing: apt-get install etcd-server" >&2; exit 1; fi
}
go_bin="$(command -v go || true)"; [ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
[ -n "$go_bin" ] || [ ! -x "$RSTAR_TOOLS_DIR/go-toolchain/bin/go" ] || go_bin="$RSTAR_TOOLS_DIR/go-toolchain/bin/go"
[ -n "$go_bin" ] || { echo "install-kube-apiserver.sh: needs Go (install-jaeger.sh fetches one into $RSTAR_TOOLS_DIR/go-toolchain)" >&2; exit 1; }
[ "$go_bin" != "$RSTAR_TOOLS_DIR/go-toolchain/bin/go" ] || export GOROOT="$RSTAR_TOOLS_DIR/go-toolchain"
t0=$(date +%s)
work="$RSTAR_TOOLS_DIR/go-kas"
rm -rf "$work"; mkdir -p "$work/src" "$bin"
export GOMODCACHE="$work/mod" GOCACHE="${RSTAR_GOCACHE:-$work/build}" GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
kdir="$("$go_bin" mod download -json "k8s.io/kubernetes@$KUBE_APISERVER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$kdir" ] || { echo "install-kube-apiserver.sh: could not download k8s.io/kubernetes@$KUBE_APISERVER_VERSION" >&2; exit 1; }
lib_version="v0.${KUBE_APISERVER_VERSION#v1.}"
{
  printf 'module rstar.local/kube-apiserver\n\ngo 1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_APISERVER_VERSION"
  grep '=> ./staging' "$kdir/go.mod" | awk -v v="$lib_version" '{printf "\t%s => %s %s\n", $1, $1, v}'
  printf ')\n'
} > "$work/src/go.mod"
cat > "$work/src/main.go" <<'GO'
// The kube-apiserver command, built from k8s.io/kubernetes as a library (see install-kube-apiserver.sh).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
(cd "$work/src" && "$go_bin" mod tidy >/dev/null && "$go_bin" build -trimpath -o "$bin/kube-apiserver" .)
echo "$KUBE_APISERVER_VERSION" > "$bin/.version"
chmod -R u+w "$work" && rm -rf "$work"
echo "install-kube-apiserver.sh: kube-apiserver $KUBE_APISERVER_VERSION in $bin ($(( $(date +%s) - t0 )) s)"
