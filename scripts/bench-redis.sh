#!/bin/bash
# The coordinator against a live redis-server (started here on 127.0.0.1,
# stopped on exit): Redis calls per 1000 admitted requests for a hot key
# and for 100 000 keys, next to the per-request design, and the parked
# latency with a Redis round trip in it, flat out and at two paced rates.
# Not a test: prints figures. DELAY_MS: Redis reached through
# tests/lib/delayproxy.py, each reply held a random 0..DELAY_MS (in order),
# a slow store.
# usage: [DELAY_MS=6] scripts/bench-redis.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
scripts/setup.sh >/dev/null
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$tmp" >/dev/null 2>&1 &
rpid=$!
ppid=
trap 'kill $rpid $ppid 2>/dev/null; wait $rpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do
	[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
	sleep 0.1
done
if [ "${DELAY_MS:-0}" != 0 ]; then
	/usr/bin/python3 tests/lib/delayproxy.py "$port" "$DELAY_MS" >"$tmp/proxy" &
	ppid=$!
	for _ in $(seq 50); do
		[ -s "$tmp/proxy" ] && break
		sleep 0.1
	done
	port=$(cat "$tmp/proxy")
	echo "== Redis behind a proxy holding each reply 0-$DELAY_MS ms"
fi
# flat out (the replay outruns one Redis connection: queueing shows), then
# paced at rates one connection sustains (the protocol's own figures)
for rate in 0 50000 200000; do
	echo "== offered: $([ "$rate" = 0 ] && echo "as fast as the replay goes" || echo "$rate requests/s")"
	build/app/sluice-bench/sluice-bench --no-huge -m 2048 --no-pci -l 0 \
		--file-prefix "benchr$$" --log-level lib.eal:warning -- \
		--redis "$port" --flood 1000 --rounds "$rounds" --rate "$rate" \
		2>/dev/null | grep '"coord"'
done
