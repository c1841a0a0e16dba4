#!/bin/bash
# Instructions, and cache misses in a model of this core's caches, that a
# request costs in sluice-bench's passes, counted by callgrind in exactly
# the function each pass times. Counts do not move with the VM's noise or
# with where the linker put the code, which on this VM's cycles move a
# pass by 3-8 % (BENCHMARKS.md, "Two builds, the same work"): a change
# smaller than that shows here. Each pass is counted over 2 and over 6
# rounds and the difference taken, so that its set-up and first round
# (flows opened, buckets drained) fall out. Not a test: nothing here
# passes or fails.
# usage: scripts/bench-count.sh [PASS...]
#   PASS: parse (the head parser alone), parse-flow, keepalive,
#   keepalive-offload, keepalive-acked and keepalive-plain (the server's
#   ACK counted too, with and without the stream normaliser), allow,
#   reject, reject-keep, leased (its round whole, the server's ACKs in
#   it; its worker runs on the wall clock, so its count moves a little
#   from run to run); default: parse keepalive keepalive-offload
#   keepalive-acked keepalive-plain allow reject (and, with allow, each
#   refusal against it: the refusal goal's measure).
#   BENCH_COUNT_FUNCS=N also lists each pass's N costliest functions.
set -euo pipefail
cd "$(dirname "$0")/.."
passes=("$@")
[ ${#passes[@]} -eq 0 ] &&
	passes=(parse keepalive keepalive-offload keepalive-acked keepalive-plain allow reject)
scripts/setup.sh >/dev/null
# valgrind is this script's alone: installed here, not by setup.sh
if ! dpkg-query -W -f='${Status}' valgrind 2>/dev/null | grep -q "ok installed"; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		valgrind >/dev/null
fi
# valgrind cannot decode the parser's PCMPESTRI: this tree is built
# without SSE4.2, and the parser runs its SSE2 path there (its own count
# is that path's; everything else is the optimised build's code)
[ -f build-count/build.ninja ] ||
	meson setup build-count --buildtype=release -Dc_args=-mno-sse4.2 >/dev/null
ninja -C build-count app/sluice-bench/sluice-bench >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
packets=2048
for pass in "${passes[@]}"; do
	toggle=(--toggle-collect='sl_bench_pass_worker*')
	case $pass in
	parse) toggle=(--toggle-collect='parse_heads*') ;;
	parse-flow | parse-flow-offload) toggle=(--toggle-collect='pass_parse_flow*') ;;
	keepalive-acked | keepalive-plain) toggle+=(--toggle-collect='ack_bursts*') ;;
	leased) toggle=(--toggle-collect='round_leased*') ;;
	esac
	for rounds in 2 6; do
		# the L1 caches of the EPYC and Xeon hosts (32 KiB, 8 ways)
		valgrind --tool=callgrind --callgrind-out-file="$tmp/$pass.$rounds" \
			"${toggle[@]}" --cache-sim=yes --I1=32768,8,64 \
			--D1=32768,8,64 --LL=33554432,16,64 \
			build-count/app/sluice-bench/sluice-bench --no-huge -m 1024 \
			--no-pci -l 0 --file-prefix "count$$" --log-level lib.eal:warning \
			-- --only "$pass" --rounds "$rounds" --packets $packets \
			--flows $packets --keys 10000 >/dev/null 2>"$tmp/err" ||
			{
				cat "$tmp/err" >&2
				exit 1
			}
		callgrind_annotate --inclusive=no --auto=no --threshold=100 \
			"$tmp/$pass.$rounds" >"$tmp/$pass.$rounds.txt" 2>/dev/null
	done
done
/usr/bin/python3 - "$tmp" $packets "${BENCH_COUNT_FUNCS:-0}" "${passes[@]}" <<'EOF'
import re, sys
tmp, packets, nfun, passes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
per = 4 * packets  # rounds 6 less rounds 2
num = lambda s: int(s.replace(",", ""))

def read(path):
    events, total, funcs = None, None, {}
    for line in open(path):
        if line.startswith("Events shown:"):
            events = line.split(":", 1)[1].split()
            continue
        toks = re.sub(r"\(\s*[\d.]+%\)", " ", line).split()
        if events is None or len(toks) <= len(events) or \
                not all(re.fullmatch(r"[\d,]+|\.", t) for t in toks[:len(events)]):
            continue
        vals = [0 if t == "." else num(t) for t in toks[:len(events)]]
        name = " ".join(toks[len(events):])
        row = dict(zip(events, vals))
        if name.startswith("PROGRAM TOTALS"):
            total = row
        else:
            # file:function [object]: the function, its clone suffix off
            f = re.sub(r"\s*\[.*\]$", "", name).split(":")[-1]
            f = re.sub(r"(\.(lto_priv|constprop|isra|part|cold)(\.\d+)?)+$", "", f)
            acc = funcs.setdefault(f, dict.fromkeys(events, 0))
            for k in events:
                acc[k] += row[k]
    return total, funcs

print("per request, %d requests a round; callgrind, L1s of 32 KiB, 8 ways" % packets)
print("%-18s %12s %10s %10s %10s" % ("pass", "instructions", "I1 misses", "D1 misses", "LL misses"))
rows = {}
for p in passes:
    (a, fa), (b, fb) = read("%s/%s.2.txt" % (tmp, p)), read("%s/%s.6.txt" % (tmp, p))
    d = {k: (b[k] - a[k]) / per for k in b}
    rows[p] = d
    print("%-18s %12.0f %10.1f %10.1f %10.1f" % (
        p, d["Ir"], d["I1mr"], d["D1mr"] + d["D1mw"], d["ILmr"] + d["DLmr"] + d["DLmw"]))
    if nfun:
        diff = {f: (fb[f]["Ir"] - fa.get(f, {}).get("Ir", 0)) / per for f in fb}
        for f, v in sorted(diff.items(), key=lambda kv: -kv[1])[:nfun]:
            i1 = (fb[f]["I1mr"] - fa.get(f, {}).get("I1mr", 0)) / per
            print("    %-34s %8.0f %8.1f" % (f[:34], v, i1))
if "keepalive-acked" in rows and "keepalive-plain" in rows:
    print("the stream normaliser: %.3f x the instructions without it (keep-alive and its ACK)"
          % (rows["keepalive-acked"]["Ir"] / rows["keepalive-plain"]["Ir"]))
# the refusal goal's measure: a refusal against the admission of the
# same new flow
for p in ("reject", "reject-keep"):
    if p in rows and "allow" in rows:
        print("%s / allow: %.2f x its instructions" % (p, rows[p]["Ir"] / rows["allow"]["Ir"]))
if "parse" in rows:
    for p in passes:
        if p not in ("parse", "keepalive-acked", "keepalive-plain"):
            print("%s / parse: %.2f x its instructions" % (p, rows[p]["Ir"] / rows["parse"]["Ir"]))
EOF
