#!/usr/bin/env bash
# Installs an Apache Kafka broker for tests and local runs: the jars of org.apache.kafka:kafka_2.13 and
# their dependencies from Maven Central (mvn, infra/kafka/pom.xml) into $RSTAR_TOOLS_DIR/kafka/libs.
# Java 17 runs it (KRaft mode, no ZooKeeper): infra/local/kafka.sh. Idempotent: a complete install is
# kept (the marker names the pom's hash); the Maven repository is cached in $RSTAR_TOOLS_DIR/m2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; . "$here/env.sh"
pom="$here/../kafka/pom.xml"
dest="$RSTAR_TOOLS_DIR/kafka"
stamp="$(sha256sum "$pom" | cut -c1-16)"
if [ -f "$dest/installed-$stamp" ]; then echo "install-kafka.sh: Kafka jars present in $dest/libs"; exit 0; fi
command -v java >/dev/null || { echo "install-kafka.sh: java (17+) is required: apt-get install openjdk-17-jre-headless" >&2; exit 1; }
command -v mvn >/dev/null || { echo "install-kafka.sh: mvn is required: apt-get install maven" >&2; exit 1; }
t0=$(date +%s)
rm -rf "$dest"; mkdir -p "$dest/libs"
mvn -q -B -f "$pom" -Dmaven.repo.local="$RSTAR_TOOLS_DIR/m2" dependency:copy-dependencies \
  -DoutputDirectory="$dest/libs" -DincludeScope=runtime
touch "$dest/installed-$stamp"
echo "install-kafka.sh: $(ls "$dest/libs" | wc -l) jars in $dest/libs ($(( $(date +%s) - t0 )) s)"
