#!/usr/bin/env bash
# Runs a single-node Apache Kafka broker in KRaft mode (broker + controller in one JVM, no ZooKeeper) in
# the foreground, from the jars install-kafka.sh copied: client port RSTAR_KAFKA_PORT (default 9092),
# controller port RSTAR_KAFKA_CONTROLLER_PORT (default 9093), data in RSTAR_KAFKA_DATA_DIR (default
# $RSTAR_STATE_DIR/kafka), formatted on first start. Loopback only. Tests spawn it with their own ports and
# directory (and restart it on the same directory); start.sh runs it in the background.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
libs="$RSTAR_TOOLS_DIR/kafka/libs"
[ -d "$libs" ] || { echo "kafka.sh: $libs is missing; run bash infra/local/install-kafka.sh" >&2; exit 1; }
port="$RSTAR_KAFKA_PORT"
cport="${RSTAR_KAFKA_CONTROLLER_PORT:-9093}"
data="${RSTAR_KAFKA_DATA_DIR:-$RSTAR_STATE_DIR/kafka}"
mkdir -p "$data"
props="$data/server.properties"
cat > "$props" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true "-Dlog4j2.configurationFile=$here/../kafka/log4j2.properties")
if [ ! -f "$data/logs/meta.properties" ]; then
  java "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format --standalone -t "$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid)" -c "$props" >/dev/null
fi
exec java "${java_opts[@]}" -cp "$libs/*" kafka.Kafka "$props"
