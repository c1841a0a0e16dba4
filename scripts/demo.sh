#!/bin/bash
# The demo: sets up, builds, and runs sluice between a client and a server
# network namespace on conf/demo.yaml, with a real backend and real curl
# traffic; prints what the appliance saw; cleans up on exit, Ctrl-C or
# failure. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

scripts/setup.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

P=demo$(( $$ % 10000 ))
TMP=$(mktemp -d)
SLUICE_PID=
BACKEND_PID=

cleanup() {
	trap - EXIT INT TERM
	[ -n "$SLUICE_PID" ] && kill -INT "$SLUICE_PID" 2>/dev/null && wait "$SLUICE_PID" 2>/dev/null || true
	[ -n "$BACKEND_PID" ] && kill "$BACKEND_PID" 2>/dev/null || true
	"$ROOT/scripts/netns.sh" down "$P"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

telemetry() {
	echo "$1" | dpdk-telemetry.py -f "$P" 2>/dev/null | sed -n 's/^{/{/p' | tail -1
}

echo "== topology: $P-c (198.18.0.1) -- sluice -- $P-s (198.18.0.2)"
scripts/netns.sh up "$P"
ip netns exec "$P-s" /usr/bin/python3 scripts/backend.py --port 80 \
	--port 8080 --log "$TMP/backend.log" >/dev/null 2>"$TMP/backend.err" &
BACKEND_PID=$!
# the demo's rules, plus a decision stream into the demo's temporary folder
cp conf/demo.yaml "$TMP/demo.yaml"
printf 'decisions: {sample: 0.1, sample_rejected: 1, file: %s}\n' \
	"$TMP/decisions.jsonl" >>"$TMP/demo.yaml"
# net_af_xdp where the kernel gives it (a lower p99 than net_af_packet on
# these veths: BENCHMARKS.md), else net_af_packet; SLUICE_PMD picks one
start_sluice() { # pmd
	build/app/sluice/sluice --no-huge -m 512 --no-pci --file-prefix "$P" -l 0,1 \
		--log-level lib.eal:warning \
		--vdev "net_${1}0,iface=$P-c1" --vdev "net_${1}1,iface=$P-s1" \
		-- --config "$TMP/demo.yaml" >"$TMP/sluice.log" 2>&1 &
	SLUICE_PID=$!
	for _ in $(seq 50); do
		telemetry /sluice/stats | grep -q '"rx"' && return 0
		kill -0 "$SLUICE_PID" 2>/dev/null || break
		sleep 0.2
	done
	kill -INT "$SLUICE_PID" 2>/dev/null && wait "$SLUICE_PID" 2>/dev/null || true
	SLUICE_PID=
	return 1
}
PMD=${SLUICE_PMD:-af_xdp}
if ! start_sluice "$PMD"; then
	[ "$PMD" = af_packet ] && { cat "$TMP/sluice.log"; exit 1; }
	echo "== net_$PMD did not start here ($(grep -m1 -io 'error.*' "$TMP/sluice.log" || echo 'no detail')); net_af_packet instead"
	PMD=af_packet
	start_sluice "$PMD" || { cat "$TMP/sluice.log"; exit 1; }
fi
echo "== sluice is up on net_$PMD ($(grep -o 'running:.*' "$TMP/sluice.log"))"

run() {
	# one bounded curl from the client namespace; prints the status code
	ip netns exec "$P-c" curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$@" || true
}

echo "== 12 requests, free-tier key k-demo-free (5/s, burst 5):"
for i in $(seq 12); do
	printf ' %s' "$(run -H 'X-API-Key: k-demo-free' "http://198.18.0.2/v1/items/$i")"
done
echo
echo "== the next one in full (curl -i): built by sluice, the backend never saw it"
ip netns exec "$P-c" curl -si --max-time 5 -H 'X-API-Key: k-demo-free' \
	http://198.18.0.2/v1/items/13 | sed 's/^/   /' || true
echo
sleep 1.2
echo "== an allowed response carries its budget; a 429 keeps the connection:"
echo "   6 requests on one connection (curl -v shows one connect)"
ip netns exec "$P-c" curl -sv --max-time 5 -H 'X-API-Key: k-demo-free' \
	-o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
	http://198.18.0.2/v1/k/1 http://198.18.0.2/v1/k/2 http://198.18.0.2/v1/k/3 \
	http://198.18.0.2/v1/k/4 http://198.18.0.2/v1/k/5 http://198.18.0.2/v1/k/6 2>&1 |
	grep -E '^< (HTTP|RateLimit:)|Connected to|Re-using' | sed 's/^/   /' || true
echo
echo "== 12 requests, pro-tier key k-demo-pro (50/s):"
for i in $(seq 12); do
	printf ' %s' "$(run -H 'X-API-Key: k-demo-pro' "http://198.18.0.2/v1/items/$i")"
done
echo
echo "== keep-alive: 5 requests on one connection, by user id"
ip netns exec "$P-c" curl -s --max-time 5 -H 'X-User-Id: alice' \
	-o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
	-w '%{http_code} ' http://198.18.0.2/v1/a http://198.18.0.2/v1/b \
	http://198.18.0.2/v1/c http://198.18.0.2/v1/d http://198.18.0.2/v1/e || true
echo
echo "== IPv6 and a chunked upload"
printf ' %s' "$(run -g 'http://[2001:2::2]/v1/six')"
printf ' %s\n' "$(run -H 'Transfer-Encoding: chunked' --data-binary 'hello' http://198.18.0.2/v1/up)"
echo "== a request smuggling shape (Content-Length with Transfer-Encoding)"
ip netns exec "$P-c" bash -c 'exec 3<>/dev/tcp/198.18.0.2/80; printf "POST /x HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" >&3; timeout 2 head -c 12 <&3; echo' || true
echo "== a revoked key, and a blocked client address (198.18.0.66): 403"
printf ' %s' "$(run -H 'X-API-Key: k-demo-revoked' http://198.18.0.2/v1/x)"
ip netns exec "$P-c" ip addr add 198.18.0.66/24 dev eth0
printf ' %s\n' "$(run --interface 198.18.0.66 http://198.18.0.2/v1/x)"
echo "== ping across the bridge"
ip netns exec "$P-c" ping -c 2 -W 1 198.18.0.2 | grep -E 'packets transmitted' || true

echo "== the backend received $(wc -l <"$TMP/backend.log") requests"
echo "== /sluice/rules:"
telemetry /sluice/rules | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["/sluice/rules"]
print("   version %s" % d.pop("version"))
for r in d.values():
    print("   %-12s allowed %-4d rejected %-4d shadow_rejected %d" % (
        r["name"], r["allowed"], r["rejected"], r["shadow_rejected"]))'
echo "== the decision stream (every rejection, 1 in 10 allowed): $(wc -l <"$TMP/decisions.jsonl") lines, the first rejections:"
grep -m 3 '"rejected"' "$TMP/decisions.jsonl" | sed 's/^/   /' || true
echo "== /sluice/stats (dpdk-telemetry.py -f $P):"
telemetry /sluice/stats | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["/sluice/stats"]
for k, v in d.items():
    if v:
        print("   %-20s %s" % (k, v))'
