#!/bin/bash
# sluice next to what users would pick instead, on the same topology and
# the same requests: wrk from the client namespace, through (a) sluice
# bridging the two namespaces, (b) HAProxy with a stick-table rate limit
# and (c) nginx limit_req, both answering 429 and both behind a kernel
# bridge instead of sluice, in front of the same nginx backend. For each:
# requests/s, p99 latency and the limiter's CPU seconds per million
# requests, on the allow path and on the reject path.
#
# usage: scripts/bench-peers.sh [SECONDS]     (not part of the tests)
# With SLUICE_RESULTS=FILE, each run is also appended to FILE as a JSON
# line (scripts/charts.py draws BENCHMARKS.md's chart from it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
secs=${1:-5}
RESULTS=${SLUICE_RESULTS:-}
scripts/setup.sh >/dev/null
for p in haproxy nginx-light; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "$p" >/dev/null
done
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

P=bp$(($$ % 10000))
T=$(mktemp -d)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	ip netns exec "$P-s" pkill -F "$T/nginx-backend.pid" 2>/dev/null || true
	ip netns exec "$P-s" pkill -F "$T/nginx-limit.pid" 2>/dev/null || true
	ip link del "$P-br" 2>/dev/null || true
	"$ROOT/scripts/netns.sh" down "$P"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

RATE_ALLOW=1000000 # per second: nothing is refused
EALMEM=(--no-huge -m 1024)
[ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" -gt 256 ] && EALMEM=(-m 1024 --huge-unlink)
scripts/netns.sh up "$P"

# the backend: nginx returning a short 200
cat >"$T/backend.conf" <<CONF
worker_processes 1;
pid $T/nginx-backend.pid;
error_log $T/backend.err;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 198.18.0.2:80; location / { return 200 "ok\n"; } }
}
CONF
ip netns exec "$P-s" nginx -c "$T/backend.conf"

cpu_of() { # utime + stime of the given pids, in clock ticks
	local t=0 pid
	for pid in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$t"
}

run_wrk() { # name path port pids...
	local name=$1 path=$2 port=$3
	shift 3
	local c0 c1 out
	c0=$(cpu_of "$@")
	out=$(ip netns exec "$P-c" timeout $((secs + 30)) wrk -t1 -c16 -d"${secs}s" \
		--latency -H 'X-API-Key: k-bench' "http://198.18.0.2:$port/v1/x")
	c1=$(cpu_of "$@")
	/usr/bin/python3 - "$name" "$path" "$((c1 - c0))" "$(getconf CLK_TCK)" <<PY
import re, sys
out = """$out"""
name, path, ticks, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
total = int(re.search(r"(\d+) requests in", out).group(1))
m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
errs = re.search(r"Socket errors:([^\n]*)", out)
print("%-15s %-7s %10.0f req/s  p99 %8.2f ms  %7.2f CPU s per 1M requests  (%d requests, %s non-2xx%s)" % (
    name, path, rps, p99, ticks / hz / total * 1e6, total, non2xx.group(1) if non2xx else "0",
    "; socket errors:" + errs.group(1) if errs else ""))
if "$RESULTS":  # one JSON line per run, for scripts/charts.py
    import json
    with open("$RESULTS", "a") as f:
        f.write(json.dumps(dict(kind="peers", limiter=name, path=path, rps=rps, p99_ms=p99,
                                cpu_s_per_1m=ticks / hz / total * 1e6, requests=total)) + "\n")
PY
}

sluice_conf() { # rate keep_alive headers_on_allow
	cat >"$T/sluice.yaml" <<CONF
version: 1
dataplane: {service_ports: [80], flows_per_worker: 65536, head_buffers_per_worker: 1024, mbufs: 16383}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: bench, scope: key, limit: $1/s, burst: $1}
response: {keep_alive: $2, headers_on_allow: $3}
CONF
}

# sluice on each of the two PMDs that reach a veth without a DPDK NIC:
# net_af_packet (a socket per port, a copy each way) and net_af_xdp (an
# XDP program steering frames into a umem ring; generic XDP on a veth);
# and on net_af_xdp with response.keep_alive (a 429 keeps the connection),
# then with response.headers_on_allow too (every allowed response given
# its budget: the frame split, the fields put in, the numbers translated)
for variant in af_packet af_xdp af_xdp+keep af_xdp+budget; do
	pmd=${variant%+*}
	keep=false
	budget=false
	[ "$variant" != "$pmd" ] && keep=true
	[ "${variant#*+}" = budget ] && budget=true
	echo "== sluice on net_$pmd, keep_alive $keep, headers_on_allow $budget (bridging the namespaces)"
	for path in allow reject; do
		rate=$RATE_ALLOW
		[ $path = reject ] && rate=1
		sluice_conf $rate $keep $budget
		build/app/sluice/sluice "${EALMEM[@]}" --no-pci -l 0,1 --file-prefix "$P" --log-level lib.eal:warning \
			--vdev "net_${pmd}0,iface=$P-c1" --vdev "net_${pmd}1,iface=$P-s1" \
			-- --config "$T/sluice.yaml" >"$T/sluice.log" 2>&1 &
		sp=$!
		PIDS+=("$sp")
		sleep 3
		if ! kill -0 "$sp" 2>/dev/null; then
			echo "net_$pmd: sluice did not start here:"
			tail -3 "$T/sluice.log"
			continue 2
		fi
		run_wrk "sluice/${variant#af_}" $path 80 "$sp"
		kill -INT "$sp"
		wait "$sp" || true
	done
done

# the peers stand in the server namespace, behind a kernel bridge
ip link add "$P-br" type bridge
ip link set "$P-c1" master "$P-br"
ip link set "$P-s1" master "$P-br"
ip link set "$P-br" up

echo "== HAProxy $(haproxy -v | head -1 | awk '{print $3}') (stick table, deny 429)"
for path in allow reject; do
	rate=$RATE_ALLOW
	[ $path = reject ] && rate=0
	cat >"$T/haproxy.cfg" <<CONF
global
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
frontend fe
  bind 198.18.0.2:8082
  stick-table type string len 64 size 1m expire 60s store http_req_rate(1s)
  http-request track-sc0 req.hdr(X-API-Key)
  http-request deny deny_status 429 if { sc_http_req_rate(0) gt $rate }
  default_backend be
backend be
  server b 198.18.0.2:80
CONF
	ip netns exec "$P-s" haproxy -f "$T/haproxy.cfg" >/dev/null 2>&1 &
	hp=$!
	PIDS+=("$hp")
	sleep 1
	run_wrk haproxy $path 8082 "$hp"
	kill "$hp"
	wait "$hp" 2>/dev/null || true
done

echo "== nginx $(nginx -v 2>&1 | awk -F/ '{print $2}') (limit_req, 429)"
for path in allow reject; do
	rate="${RATE_ALLOW}r/s"
	burst="burst=$RATE_ALLOW"
	[ $path = reject ] && rate="1r/m" && burst=""
	cat >"$T/limit.conf" <<CONF
worker_processes 1;
pid $T/nginx-limit.pid;
error_log $T/limit.err;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  limit_req_zone \$http_x_api_key zone=k:10m rate=$rate;
  upstream be { server 198.18.0.2:80; keepalive 32; }
  server {
    listen 198.18.0.2:8083;
    location / {
      limit_req zone=k $burst nodelay;
      limit_req_status 429;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass http://be;
    }
  }
}
CONF
	ip netns exec "$P-s" nginx -c "$T/limit.conf"
	sleep 1
	run_wrk nginx $path 8083 $(pgrep -P "$(cat "$T/nginx-limit.pid")")
	ip netns exec "$P-s" nginx -c "$T/limit.conf" -s stop 2>/dev/null
	sleep 0.5
done
