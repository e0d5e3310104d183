# Shared settings for the local infrastructure scripts (sourced, not run).
RSTAR_STATE_DIR="${RSTAR_STATE_DIR:-/var/tmp/rstar-local}"
RSTAR_PG_PORT="${RSTAR_PG_PORT:-5432}"
RSTAR_NATS_PORT="${RSTAR_NATS_PORT:-4222}"
RSTAR_NATS_MONITOR_PORT="${RSTAR_NATS_MONITOR_PORT:-8222}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
export RSTAR_STATE_DIR RSTAR_PG_PORT RSTAR_NATS_PORT RSTAR_NATS_MONITOR_PORT PG_BIN
