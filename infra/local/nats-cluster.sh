#!/usr/bin/env bash
# A 3-node NATS JetStream cluster on loopback (three nats-server processes joined by routes), for trying
# the bus's failover by hand; the e2e tests start their own on free ports (test/support/nats-cluster.ts).
#
#   bash infra/local/nats-cluster.sh start      # nodes n1..n3: clients 4231-4233, routes 6231-6233, monitor 8231-8233
#   bash infra/local/nats-cluster.sh status     # which nodes run, the meta leader, each stream's leader
#   bash infra/local/nats-cluster.sh kill 2     # SIGKILL node n2 (a lost node)
#   bash infra/local/nats-cluster.sh start 2    # start n2 again (it catches up from its peers)
#   bash infra/local/nats-cluster.sh stop       # SIGTERM every node; `stop --wipe` also deletes the stores
#
# Services take all three URLs (RSTAR_NATS_URL=nats://127.0.0.1:4231,nats://127.0.0.1:4232,nats://127.0.0.1:4233)
# and RSTAR_STREAM_REPLICAS=3, so the stream and its consumers keep a copy on every node and lose nothing
# while any two run. Ports: RSTAR_NATS_CLUSTER_BASE (default 4230 -> 4231..4233, routes +2000, monitor +4000).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
conf="$here/../nats/cluster-node.conf"
base="${RSTAR_NATS_CLUSTER_BASE:-4230}"
dir="$RSTAR_STATE_DIR/nats-cluster"
mkdir -p "$dir"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [ -f "$dir/n$1.pid" ] && kill -0 "$(cat "$dir/n$1.pid")" 2>/dev/null; }

start_node() {
  local i="$1" client=$((base + $1))
  if alive "$i"; then echo "nats-cluster: n$i already runs (pid $(cat "$dir/n$i.pid"))"; return; fi
  if port_open "$client"; then echo "nats-cluster: port $client is taken by another process" >&2; exit 1; fi
  mkdir -p "$dir/n$i"
  RSTAR_NATS_NODE="n$i" RSTAR_NATS_CLIENT_PORT="$client" RSTAR_NATS_ROUTE_PORT=$((client + 2000)) \
    RSTAR_NATS_MONITOR_PORT=$((client + 4000)) RSTAR_NATS_STORE_DIR="$dir/n$i" \
    RSTAR_NATS_ROUTE_1="nats-route://127.0.0.1:$((base + 2001))" RSTAR_NATS_ROUTE_2="nats-route://127.0.0.1:$((base + 2002))" \
    RSTAR_NATS_ROUTE_3="nats-route://127.0.0.1:$((base + 2003))" \
    nohup nats-server -c "$conf" >>"$dir/n$i.log" 2>&1 &
  echo $! > "$dir/n$i.pid"
  for _ in $(seq 1 50); do port_open "$client" && break; sleep 0.1; done
  port_open "$client" || { echo "nats-cluster: n$i did not start, see $dir/n$i.log" >&2; exit 1; }
  echo "nats-cluster: n$i started on 127.0.0.1:$client (pid $(cat "$dir/n$i.pid"))"
}

nodes() { if [ -n "${1:-}" ]; then echo "$1"; else echo 1 2 3; fi; }
check_node() { case "${1:-}" in ''|1|2|3) ;; *) echo "nats-cluster: node must be 1, 2 or 3, got \"$1\"" >&2; exit 2;; esac; }

cmd="${1:-}"; arg="${2:-}"
case "$cmd" in
  start)
    check_node "$arg"
    for i in $(nodes "$arg"); do start_node "$i"; done
    echo "export RSTAR_NATS_URL=nats://127.0.0.1:$((base + 1)),nats://127.0.0.1:$((base + 2)),nats://127.0.0.1:$((base + 3))"
    echo "export RSTAR_STREAM_REPLICAS=3"
    ;;
  kill)
    check_node "$arg"; [ -n "$arg" ] || { echo "nats-cluster: kill needs a node (1, 2 or 3)" >&2; exit 2; }
    if alive "$arg"; then
      kill -9 "$(cat "$dir/n$arg.pid")"
      for _ in $(seq 1 50); do port_open $((base + arg)) || break; sleep 0.1; done
      rm -f "$dir/n$arg.pid"; echo "nats-cluster: n$arg killed (SIGKILL)"
    else echo "nats-cluster: n$arg is not running"; fi
    ;;
  stop)
    for i in 1 2 3; do if alive "$i"; then kill "$(cat "$dir/n$i.pid")"; echo "nats-cluster: n$i stopped"; fi; rm -f "$dir/n$i.pid"; done
    if [ "$arg" = "--wipe" ]; then rm -rf "$dir"; echo "nats-cluster: stores deleted"; fi
    ;;
  status)
    for i in 1 2 3; do
      if alive "$i"; then
        jsz="$(curl -fsS "http://127.0.0.1:$((base + 4000 + i))/jsz?streams=true" 2>/dev/null || true)"
        echo "n$i: running on 127.0.0.1:$((base + i)); $(printf '%s' "$jsz" | node -e '
          let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
            try { const j = JSON.parse(s); const st = (j.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
              console.log(`meta leader ${j.meta_cluster?.leader ?? "?"}; streams: ${st.map((x) => `${x.name} (leader ${x.cluster?.leader ?? "?"}, ${x.state.messages} msgs)`).join(", ") || "none"}`);
            } catch { console.log("no JetStream answer yet"); } });')"
      else echo "n$i: not running"; fi
    done
    ;;
  *) echo "usage: nats-cluster.sh start [N] | kill N | stop [--wipe] | status" >&2; exit 2 ;;
esac
