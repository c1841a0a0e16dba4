#!/bin/bash
# Exec to forwarding: sluice started RUNS times on two null ports with a
# small flow table and with a million flows per worker, each start timed
# by sluice itself (its log's "forwarding N ms after exec": every worker
# has faulted its tables in and looped once). Prints the median and the
# range of each. Not a test: these machines are noisy.
# usage: scripts/bench-start.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ -x build/app/sluice/sluice ] || { meson setup build >/dev/null; ninja -C build >/dev/null; }
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
start_once() { # flows -> ms
	sed "s/@FLOWS@/$1/" >"$tmp/s.yaml" <<'YAML'
version: 1
dataplane: {service_ports: [80], flows_per_worker: @FLOWS@, buckets_per_worker: 65536,
            head_buffers_per_worker: 256, mbufs: 8191}
rules:
  - {name: r, scope: ip, match: {path_prefix: /}, limit: 100/s}
YAML
	build/app/sluice/sluice --no-huge -m 4096 --no-pci --file-prefix "start$$" -l 0,1 \
		--log-level lib.eal:warning --vdev net_null0 --vdev net_null1 \
		-- --config "$tmp/s.yaml" >"$tmp/log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		grep -q "after exec" "$tmp/log" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	grep -o 'forwarding [0-9]* ms after exec' "$tmp/log" | awk '{print $2}'
}
for flows in 4096 1048576; do
	for _ in $(seq "$runs"); do start_once "$flows"; done |
		/usr/bin/python3 -c '
import statistics, sys
v = [int(x) for x in sys.stdin.read().split()]
print("flows_per_worker %s: exec to forwarding median %d ms (%d-%d, %d runs)" % (
    sys.argv[1], statistics.median(v), min(v), max(v), len(v)))' "$flows"
done
