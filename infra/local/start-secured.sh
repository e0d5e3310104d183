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
