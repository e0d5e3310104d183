#!/usr/bin/env bash
# Installs the system packages rstar needs (Debian/Ubuntu, as root): Postgres, NATS, bubblewrap; for
# the tracing and Kafka export tests Java 17 + Maven (Kafka's jars) and curl + unzip (a Go toolchain to
# build Jaeger, see install-jaeger.sh); and Debian's chromium for the dashboard's browser tests
# (playwright-core drives it; nothing is downloaded by the tests themselves).
# `install.sh train` checks only what the main job (`rstar train` of the built-in policy) needs: bubblewrap.
set -euo pipefail
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ "${1:-all}" != train ]; then
command -v nats-server >/dev/null || need+=(nats-server)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v curl >/dev/null || need+=(curl)
command -v unzip >/dev/null || need+=(unzip)
[ -x /usr/bin/chromium ] || need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install.sh: need root to apt-get install ${need[*]}" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "${1:-all}" = train ]; then echo "install.sh: bubblewrap present"; exit 0; fi
# Debian's postgresql package starts a cluster on 5432; rstar runs its own, so stop the packaged one.
if command -v pg_ctlcluster >/dev/null && pg_lsclusters -h 2>/dev/null | grep -q online; then
  pg_lsclusters -h | awk '$4=="online"{print $1, $2}' | while read -r v c; do pg_ctlcluster "$v" "$c" stop || true; done
fi
echo "install.sh: bubblewrap, nats-server, postgresql, java, maven, curl, unzip and chromium present"
