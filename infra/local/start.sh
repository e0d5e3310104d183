#!/usr/bin/env bash
# Starts Postgres and a JetStream-enabled NATS on loopback unless they already answer, and with
# RSTAR_WITH="jaeger kafka" (either or both) Jaeger (OTLP on 4318, UI/API on 16686) and a Kafka broker
# (9092) in the background for local runs (tests start their own on free ports).
# Records what it started in $RSTAR_STATE_DIR so stop.sh stops only that.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
mkdir -p "$RSTAR_STATE_DIR"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if port_open "$RSTAR_PG_PORT"; then
  echo "start.sh: Postgres already answers on $RSTAR_PG_PORT"
else
  data="$RSTAR_STATE_DIR/pg"
  run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"; [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$RSTAR_STATE_DIR/pg"
    run_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
    { echo "listen_addresses = '127.0.0.1'"; echo "port = $RSTAR_PG_PORT"; echo "unix_socket_directories = '/tmp'";
      echo "fsync = on"; echo "max_connections = 200"; echo "shared_buffers = 256MB"; } >> "$data/postgresql.conf"
  fi
  run_pg "$PG_BIN/pg_ctl" -D "$data" -l "$data/server.log" -w start >/dev/null
  touch "$RSTAR_STATE_DIR/pg.started"
  # The archive writes ~2 KB of WAL per event: with the default 1 GB max_wal_size a benchmark forces a
  # checkpoint every ~200k events, and each checkpoint makes the next writes of every index page log a full
  # page image. Applied on every start (ALTER SYSTEM is idempotent) so clusters made earlier get it too.
  run_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres -qc "ALTER SYSTEM SET max_wal_size = '4GB'" \
    -c "ALTER SYSTEM SET checkpoint_timeout = '15min'" -c "SELECT pg_reload_conf()" >/dev/null
  run_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres -tc "SELECT 1 FROM pg_roles WHERE rolname='rstar'" | grep -q 1 \
    || run_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres -qc "CREATE ROLE rstar LOGIN SUPERUSER PASSWORD 'rstar'"
  for db in rstar rstar_test; do
    run_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='$db'" | grep -q 1 \
      || run_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres -qc "CREATE DATABASE $db OWNER rstar"
  done
  echo "start.sh: Postgres started on 127.0.0.1:$RSTAR_PG_PORT (user rstar/rstar, databases rstar, rstar_test)"
fi

if port_open "$RSTAR_NATS_PORT"; then
  echo "start.sh: NATS already answers on $RSTAR_NATS_PORT"
else
  mkdir -p "$RSTAR_STATE_DIR/nats"
  nohup nats-server -js -a 127.0.0.1 -p "$RSTAR_NATS_PORT" -m "$RSTAR_NATS_MONITOR_PORT" \
    -sd "$RSTAR_STATE_DIR/nats" -c "$here/../nats/nats-server.conf" >"$RSTAR_STATE_DIR/nats.log" 2>&1 &
  echo $! > "$RSTAR_STATE_DIR/nats.pid"
  for _ in $(seq 1 50); do port_open "$RSTAR_NATS_PORT" && break; sleep 0.1; done
  port_open "$RSTAR_NATS_PORT" || { echo "start.sh: nats-server did not start, see $RSTAR_STATE_DIR/nats.log" >&2; exit 1; }
  echo "start.sh: NATS (JetStream) started on 127.0.0.1:$RSTAR_NATS_PORT"
fi
start_bg() { # name port script
  if port_open "$2"; then echo "start.sh: $1 already answers on $2"; return; fi
  nohup bash "$here/$3" >"$RSTAR_STATE_DIR/$1.log" 2>&1 &
  echo $! > "$RSTAR_STATE_DIR/$1.pid"
  for _ in $(seq 1 600); do port_open "$2" && break; sleep 0.2; done
  port_open "$2" || { echo "start.sh: $1 did not start, see $RSTAR_STATE_DIR/$1.log" >&2; exit 1; }
  echo "start.sh: $1 started on 127.0.0.1:$2"
}
for extra in ${RSTAR_WITH:-}; do
  case "$extra" in
    jaeger) start_bg jaeger "$RSTAR_JAEGER_QUERY_PORT" jaeger.sh; echo "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RSTAR_JAEGER_OTLP_PORT";;
    kafka) start_bg kafka "$RSTAR_KAFKA_PORT" kafka.sh; echo "export RSTAR_KAFKA_BROKERS=127.0.0.1:$RSTAR_KAFKA_PORT";;
    *) echo "start.sh: RSTAR_WITH names jaeger and kafka, got \"$extra\"" >&2; exit 1;;
  esac
done
echo "export RSTAR_TEST_DATABASE_URL=postgres://rstar:rstar@127.0.0.1:$RSTAR_PG_PORT/rstar_test"
echo "export RSTAR_TEST_NATS_URL=nats://127.0.0.1:$RSTAR_NATS_PORT"
