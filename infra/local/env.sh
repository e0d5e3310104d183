# Shared settings for the local infrastructure scripts (sourced, not run).
RSTAR_STATE_DIR="${RSTAR_STATE_DIR:-/var/tmp/rstar-local}"
RSTAR_PG_PORT="${RSTAR_PG_PORT:-5432}"
RSTAR_NATS_PORT="${RSTAR_NATS_PORT:-4222}"
RSTAR_NATS_MONITOR_PORT="${RSTAR_NATS_MONITOR_PORT:-8222}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
export RSTAR_STATE_DIR RSTAR_PG_PORT RSTAR_NATS_PORT RSTAR_NATS_MONITOR_PORT PG_BIN
# Jaeger and Kafka (tracing and export tests): installed under RSTAR_TOOLS_DIR, a folder CI can cache.
RSTAR_TOOLS_DIR="${RSTAR_TOOLS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.rstar/tools}"
JAEGER_VERSION="${JAEGER_VERSION:-v1.76.0}"
# The Go used to build Jaeger where the machine has no Go >= 1.24.6 (fetched from the Go proxy).
GO_TOOLCHAIN_VERSION="${GO_TOOLCHAIN_VERSION:-1.25.4}"
RSTAR_JAEGER_OTLP_PORT="${RSTAR_JAEGER_OTLP_PORT:-4318}"
RSTAR_JAEGER_QUERY_PORT="${RSTAR_JAEGER_QUERY_PORT:-16686}"
RSTAR_KAFKA_PORT="${RSTAR_KAFKA_PORT:-9092}"
# The kube-apiserver the manifest dry-run test applies the overlays to (install-kube-apiserver.sh builds it).
KUBE_APISERVER_VERSION="${KUBE_APISERVER_VERSION:-v1.33.5}"
export RSTAR_TOOLS_DIR JAEGER_VERSION GO_TOOLCHAIN_VERSION RSTAR_JAEGER_OTLP_PORT RSTAR_JAEGER_QUERY_PORT RSTAR_KAFKA_PORT KUBE_APISERVER_VERSION
