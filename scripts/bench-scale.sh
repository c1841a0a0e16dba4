#!/bin/bash
# Worker scaling of the decision pass: one sluice-bench run per worker
# count (each measures 1 worker, then N at once, in the same run) and
# optionally the 1M-key x 1M-flow corpus. For many-core machines; the
# 2-vCPU CI box can only run "1 2".
# usage: scripts/bench-scale.sh [--big] N...   (e.g. 2 4 8 15)
# env: SLUICE_BENCH (binary), SLUICE_EAL (extra EAL args), SLUICE_MEM (MB)
set -uo pipefail
cd "$(dirname "$0")/.."
bench=${SLUICE_BENCH:-build/app/sluice-bench/sluice-bench}
big=0
[ "${1:-}" = --big ] && { big=1; shift; }
# without hugepages a pool gives each mbuf a 4 KiB page of its own: the
# 1M-request corpus's 2.1 M of them take 8.6 GB
mem=${SLUICE_MEM:-$((big ? 12288 : 8192))}
# shellcheck disable=SC2206
extra=(${SLUICE_EAL:-})
hp=--no-huge
[ "$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)" -gt 1024 ] && hp=--huge-unlink
run() {
	local lcores=$1
	shift
	timeout 300 "$bench" $hp -m "$mem" --no-pci -l "$lcores" \
		--file-prefix "scale$$_$RANDOM" --log-level lib.eal:warning \
		"${extra[@]}" -- "$@"
}
echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
for n in "$@"; do
	echo "== $n workers"
	run "0-$((n - 1))" --workers "$n" --flood 10000 | grep -E '^(scale|decisions|\{"workers)'
done
# one pass a run: every pass's worker sized for 1M flows and keys, and
# the respond passes' frames, would not fit beside each other
if [ $big = 1 ]; then
	for pass in leased keepalive; do
		echo "== 1M keys x 1M flows, one core: $pass"
		run 0 --packets 1048576 --flows 1048576 --keys 1000000 \
			--rounds 3 --only "$pass" | grep -E '^\{|Cause|bench:'
	done
fi
