#!/usr/bin/env bash
# A secured NATS beside the open one of start.sh: JetStream with the per-service nkey users and
# per-subject permissions of `rstar security init` (docs/security.md). The secrets go to
# $RSTAR_SECRETS_ROOT (default $RSTAR_STATE_DIR/secrets, made once, never overwritten); each service then
# runs with RSTAR_SECRETS_DIR=$RSTAR_SECRETS_ROOT/<service> and RSTAR_NATS_URL printed below.
# `start-secured.sh stop` stops the server it started. The open NATS of start.sh (tests) is untouched.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
port="${RSTAR_SECURE_NATS_PORT:-4223}"
secrets="${RSTAR_SECRETS_ROOT:-$RSTAR_STATE_DIR/secrets}"
pidfile="$RSTAR_STATE_DIR/nats-secured.pid"
if [ "${1:-}" = stop ]; then
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null && echo "start-secured.sh: secured NATS stopped"
  rm -f "$pidfile"; exit 0
fi
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Fail closed: a secured stack beside a local Postgres whose superuser `rstar` still logs in with the
# well-known password of start.sh would let anything on this host (the service that runs model-written
# code included) rewrite the archive as a superuser. RSTAR_ALLOW_INSECURE=true goes ahead anyway, loudly.
psql_bin="$PG_BIN/psql"; [ -x "$psql_bin" ] || psql_bin="$(command -v psql || true)"
if [ -n "$psql_bin" ] && port_open "$RSTAR_PG_PORT" \
   && PGPASSWORD=rstar PGCONNECT_TIMEOUT=5 "$psql_bin" -h 127.0.0.1 -p "$RSTAR_PG_PORT" -U rstar -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; then
  msg="the Postgres on 127.0.0.1:$RSTAR_PG_PORT lets the superuser rstar log in with the well-known password 'rstar' (start.sh's default). Give it another: psql -h 127.0.0.1 -p $RSTAR_PG_PORT -U rstar -d postgres -c \"ALTER ROLE rstar PASSWORD '<secret>'\" (a new cluster: RSTAR_PG_PASSWORD=<secret> bash infra/local/start.sh), and use RSTAR_PG_PASSWORD=<secret> from then on (docs/security.md, section 3)"
  if [ "${RSTAR_ALLOW_INSECURE:-}" = true ]; then
    echo "start-secured.sh: INSECURE (RSTAR_ALLOW_INSECURE=true): $msg" >&2
  else
    echo "start-secured.sh: refusing to start: $msg. RSTAR_ALLOW_INSECURE=true starts it anyway." >&2
    exit 3
  fi
fi
mkdir -p "$RSTAR_STATE_DIR/nats-secured"
if [ ! -f "$secrets/nats-auth.conf" ]; then
  (cd "$here/../.." && npx tsx libs/cli/src/main.ts security init --out "$secrets" >/dev/null)
fi
conf="$RSTAR_STATE_DIR/nats-secured.conf"
# The same server settings as the open one, plus the users and their permissions (nats-server resolves
# an include next to the configuration file).
install -m 600 "$secrets/nats-auth.conf" "$RSTAR_STATE_DIR/nats-secured-auth.conf"
{ cat "$here/../nats/nats-server.conf"; echo "include ./nats-secured-auth.conf"; } > "$conf"
if port_open "$port"; then
  echo "start-secured.sh: something already answers on $port" >&2; exit 1
fi
nohup nats-server -js -a 127.0.0.1 -p "$port" -sd "$RSTAR_STATE_DIR/nats-secured" -c "$conf" \
  >"$RSTAR_STATE_DIR/nats-secured.log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 1 50); do port_open "$port" && break; sleep 0.1; done
port_open "$port" || { echo "start-secured.sh: nats-server did not start, see $RSTAR_STATE_DIR/nats-secured.log" >&2; exit 1; }
echo "start-secured.sh: secured NATS (JetStream, nkey users, per-subject permissions) on 127.0.0.1:$port"
echo "export RSTAR_NATS_URL=nats://127.0.0.1:$port"
echo "export RSTAR_SECRETS_ROOT=$secrets   # each service: RSTAR_SECRETS_DIR=\$RSTAR_SECRETS_ROOT/<service>, engines: \$RSTAR_SECRETS_ROOT/engine"
