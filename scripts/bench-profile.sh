#!/bin/bash
# Where one pass of sluice-bench spends its cycles: runs the pass alone
# (--only) under `perf record` with call graphs, sorts every sample taken
# inside the data path (sl_worker_burst, sl_worker_flush, sl_park_poll)
# into a stage by the first stage function on its call chain (leaf first),
# and weighs the shares with the pass's own cycles per request from the
# same run. The build is linked whole-program (b_lto): a function gcc
# inlined counts toward its caller's stage (identity, the target's
# normaliser and the rule match mostly in "decision (rest)"); a tree set
# up with -Db_lto=false splits them. Profiles, not a test: nothing here
# passes or fails.
# usage: scripts/bench-profile.sh [PASS] [sluice-bench args after --]
#   PASS: keepalive (default), leased, allow, reject, sampled, flow,
#   passthrough; default corpus: 2048 requests and flows, 10 000 keys.
set -euo pipefail
cd "$(dirname "$0")/.."
pass=${1:-keepalive}
shift || true
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--packets 2048 --flows 2048 --keys 10000)
scripts/setup.sh >/dev/null
# perf is this script's alone: installed here, not by setup.sh
if ! dpkg-query -W -f='${Status}' linux-perf 2>/dev/null | grep -q "ok installed"; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		linux-perf >/dev/null
fi
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -q -o "$tmp/perf.data" -F 2999 --call-graph dwarf,16384 -- \
	build/app/sluice-bench/sluice-bench --no-huge -m 1024 --no-pci -l 0 \
	--file-prefix "prof$$" --log-level lib.eal:warning -- \
	--only "$pass" --rounds 1500 --flood 1000 "${args[@]}" >"$tmp/out" 2>/dev/null
perf script -i "$tmp/perf.data" -F ip,sym 2>/dev/null >"$tmp/script"
/usr/bin/python3 - "$tmp/out" "$tmp/script" <<'EOF'
import json, re, sys
res = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
cyc = res["cycles_per_request"]
# first match from the leaf up names the stage
stages = [
    ("HTTP head parse", r"^sl_http_parse_request$"),
    ("identity hashes", r"^(sl_hash64x2|sl_hash64|scope_bytes)$"),
    ("identity", r"^sl_ident_"),
    ("rule match", r"^(sl_ruleset_|sl_method_bit|sl_match)"),
    ("bucket/lease lookup", r"^(sl_bucket_get|sl_hinted_get|get_index|sl_bucket_prefetch)"),
    ("limit check + charge", r"^(sl_limit_|check_one|commit_all)"),
    ("leases (park, renew)", r"^(sl_park_|sl_lease_|decide_leased)"),
    ("429 / RST replies", r"^(sl_reply_|pend_429|sl_top_)"),
    ("decision sampling", r"^(sl_dec_|sample_)"),
    ("decision (rest)", r"^(sl_decide|allowed|on_event)$"),
    ("TCP checksum", r"^(sl_tcp_cksum_ok|sl_cksum_)"),
    ("frame classify", r"^(sl_pkt_parse|parse_tcp|parse_ipv4|parse_ipv6)"),
    ("flow hash", r"^sl_flow_(key_)?hash$"),
    ("flow table", r"^sl_flow_(find|insert|lookup|prefetch|peek|touch|remove)"),
    ("flow state machine", r"^(process|sl_flow_client_segment|data|head_unbuffered|head_buffered|sl_flow_)"),
    ("TX (tx_burst, latency stamps)", r"^(rte_eth_tx_burst|eth_null|flush|time_tx|sl_worker_send|sl_hist_add)"),
    ("mbuf free/alloc", r"^(rte_pktmbuf|rte_mempool|__rte_pktmbuf|rte_mbuf)"),
    ("burst loop + staging (inlined)", r"^(sl_worker_burst|sl_worker_flush|handle_parsed|inspect|stage)$"),
]
inside = re.compile(r"^(sl_worker_burst|sl_worker_flush|sl_park_poll)$")
counts, total, chain = {}, 0, []

def flush_sample():
    global total
    syms = [s for s in chain]
    if not any(inside.match(s) for s in syms) or any(s == "sl_coord_poll" for s in syms):
        return
    total += 1
    for s in syms:
        for name, rx in stages:
            if re.match(rx, s):
                counts[name] = counts.get(name, 0) + 1
                return
    counts["other (libc, kernel)"] = counts.get("other (libc, kernel)", 0) + 1

for line in open(sys.argv[2], errors="replace"):
    if not line.strip():
        if chain:
            flush_sample()
        chain = []
        continue
    parts = line.split()
    if len(parts) >= 2 and re.match(r"^[0-9a-f]+$", parts[0]):
        # the optimised build is linked whole-program: a function gcc
        # cloned or split keeps its name before the suffix
        sym = re.sub(r"\+0x[0-9a-f]+$", "", parts[1])
        chain.append(re.sub(r"(\.(lto_priv|constprop|isra|part|cold)(\.\d+)?)+$", "", sym))
if chain:
    flush_sample()
if total == 0:
    sys.exit("bench-profile: no samples inside the data path")
print("pass %s: %.1f cycles/request (%d requests/round, %d rounds), %d samples in the data path"
      % (res["only"], cyc, res["packets"], res["rounds"], total))
print("%-34s %7s %12s" % ("stage", "share", "cycles/req"))
for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
    print("%-34s %6.1f%% %12.0f" % (name, 100.0 * n / total, cyc * n / total))
EOF
