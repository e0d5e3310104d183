#!/usr/bin/env bash
# Runs Jaeger all-in-one in the foreground (infra/jaeger/jaeger.yaml): OTLP/HTTP on RSTAR_JAEGER_OTLP_PORT
# (default 4318), query API and UI on RSTAR_JAEGER_QUERY_PORT (default 16686), health on
# RSTAR_JAEGER_HEALTH_PORT (default 13133), gRPC query on RSTAR_JAEGER_QUERY_GRPC_PORT (default 16685).
# Tests spawn it with their own ports; start.sh runs it in the background. Install: install-jaeger.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
bin="$RSTAR_TOOLS_DIR/jaeger/bin/jaeger"
[ -x "$bin" ] || { echo "jaeger.sh: $bin is missing; run bash infra/local/install-jaeger.sh" >&2; exit 1; }
export RSTAR_JAEGER_OTLP_PORT RSTAR_JAEGER_QUERY_PORT
export RSTAR_JAEGER_HEALTH_PORT="${RSTAR_JAEGER_HEALTH_PORT:-13133}" RSTAR_JAEGER_QUERY_GRPC_PORT="${RSTAR_JAEGER_QUERY_GRPC_PORT:-16685}"
exec "$bin" --config "$here/../jaeger/jaeger.yaml"
