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
  case "${RSTAR_PG_PASSWORD:-rstar}" in
    *[!A-Za-z0-9_.-]*) echo "start.sh: RSTAR_PG_PASSWORD may hold letters, digits, '_', '.' and '-' only" >&2; exit 2;;
  esac
  # The superuser's password (random, 0600 beside the data): the cluster asks every connection for a
  # password (scram-sha-256), loopback included.
  pwfile="$RSTAR_STATE_DIR/pg-superuser.password"
  run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    ( umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > "$pwfile" )
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$RSTAR_STATE_DIR/pg" "$pwfile"
    run_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=scram-sha-256 --pwfile="$pwfile" -E UTF8 >/dev/null
    { echo "listen_addresses = '127.0.0.1'"; echo "port = $RSTAR_PG_PORT"; echo "unix_socket_directories = '/tmp'";
      echo "fsync = on"; echo "max_connections = 200"; echo "shared_buffers = 256MB"; } >> "$data/postgresql.conf"
  fi
  # A cluster made before start.sh used passwords trusts every local connection, and has no password file
  # (psql below then connects without one). It keeps working as it is; switching it is a manual step.
  pgpw=""; [ -f "$pwfile" ] && pgpw="$(cat "$pwfile")"
  if grep -Eq '^[[:space:]]*(local|host)[^#]*[[:space:]]trust([[:space:]]|$)' "$data/pg_hba.conf"; then
    echo "start.sh: this cluster ($data) trusts local connections without a password; docs/operations.md (Local Postgres) says how to switch it to scram-sha-256" >&2
  fi
  run_pg "$PG_BIN/pg_ctl" -D "$data" -l "$data/server.log" -w start >/dev/null
  touch "$RSTAR_STATE_DIR/pg.started"
  psql_admin() { run_pg env PGPASSWORD="$pgpw" "$PG_BIN/psql" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U postgres "$@"; }
  # The archive writes ~2 KB of WAL per event: with the default 1 GB max_wal_size a benchmark forces a
  # checkpoint every ~200k events, and each checkpoint makes the next writes of every index page log a full
  # page image. Applied on every start (ALTER SYSTEM is idempotent) so clusters made earlier get it too.
  psql_admin -qc "ALTER SYSTEM SET max_wal_size = '4GB'" -c "ALTER SYSTEM SET checkpoint_timeout = '15min'" -c "SELECT pg_reload_conf()" >/dev/null
  # `rstar` is the administration and test role (a superuser: tests create databases and roles, and edit the
  # archive behind its trigger to prove verify catches it). Services never use it in secured mode: each has
  # its own role from `rstar db roles`, and a superuser URL is refused there.
  psql_admin -tc "SELECT 1 FROM pg_roles WHERE rolname='rstar'" | grep -q 1 \
    || psql_admin -qc "CREATE ROLE rstar LOGIN SUPERUSER PASSWORD '${RSTAR_PG_PASSWORD:-rstar}'"
  for db in rstar rstar_test; do
    psql_admin -tc "SELECT 1 FROM pg_database WHERE datname='$db'" | grep -q 1 \
      || psql_admin -qc "CREATE DATABASE $db OWNER rstar"
  done
  echo "start.sh: Postgres started on 127.0.0.1:$RSTAR_PG_PORT (user rstar, password \$RSTAR_PG_PASSWORD or rstar; databases rstar, rstar_test)"
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
echo "export RSTAR_TEST_DATABASE_URL=postgres://rstar:${RSTAR_PG_PASSWORD:-rstar}@127.0.0.1:$RSTAR_PG_PORT/rstar_test"
echo "export RSTAR_TEST_NATS_URL=nats://127.0.0.1:$RSTAR_NATS_PORT"
