#!/usr/bin/env bash
# Stops only what start.sh started.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
if [ -f "$RSTAR_STATE_DIR/nats.pid" ]; then
  kill "$(cat "$RSTAR_STATE_DIR/nats.pid")" 2>/dev/null && echo "stop.sh: NATS stopped"; rm -f "$RSTAR_STATE_DIR/nats.pid"
fi
for extra in jaeger kafka; do
  # Their scripts exec the server, so the recorded pid is the server's.
  if [ -f "$RSTAR_STATE_DIR/$extra.pid" ]; then
    kill "$(cat "$RSTAR_STATE_DIR/$extra.pid")" 2>/dev/null && echo "stop.sh: $extra stopped"; rm -f "$RSTAR_STATE_DIR/$extra.pid"
  fi
done
if [ -f "$RSTAR_STATE_DIR/pg.started" ]; then
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$RSTAR_STATE_DIR/pg" -m fast stop >/dev/null
  else "$PG_BIN/pg_ctl" -D "$RSTAR_STATE_DIR/pg" -m fast stop >/dev/null; fi && echo "stop.sh: Postgres stopped"
  rm -f "$RSTAR_STATE_DIR/pg.started"
fi
