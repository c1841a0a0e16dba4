#!/bin/bash
# Sets everything up, builds, and runs every test suite: unit (cmocka),
# packet (net_pcap + scapy) and end-to-end (namespaces, af_packet, curl,
# a real backend); then all of them again with the whole program built
# with ASan and UBSan.
# Exits non-zero on any failure. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

summary() {
	# meson's own summary is not a line CI reads: count from its log.
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
bad = int(sys.argv.pop(1))
p, f = 4 - bad, bad  # format, cycles and the fuzz runs count as tests
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)["result"]
        p += r == "OK"
        f += r not in ("OK", "SKIP", "EXPECTEDFAIL")
print("test.sh: %d passed, %d failed" % (p, f))
PY
}

rc=0
fmt=0
scripts/format.sh --check || { rc=1; fmt=1; }
# no new dependency cycle between C files (the known ones: issue 15)
/usr/bin/python3 scripts/check-cycles.py || { rc=1; fmt=$((fmt + 1)); }
build build
meson test -C build --print-errorlogs --num-processes 1 || rc=1
build build-asan -Dbuildtype=debug -Db_sanitize=address,undefined \
	-Db_lundef=false
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ASAN_OPTIONS=detect_leaks=1 \
	meson test -C build-asan --suite unit --print-errorlogs || rc=1
# EAL keeps its memory until exit by design: leaks are not checked there
ASAN_OPTIONS=detect_leaks=0 meson test -C build-asan --suite func \
	--suite e2e --print-errorlogs --logbase testlog-func || rc=1
# the target normaliser decides what every path rule sees: fuzzed on
# every run, for a bounded time (a finding fails the run)
fz=0
scripts/fuzz.sh 20 norm || { rc=1; fz=1; }
# and the stream normaliser, which decides what bytes are a request at all
scripts/fuzz.sh 15 flow || { rc=1; fz=1; }
summary "$((fmt + fz))" build/meson-logs/testlog.json build-asan/meson-logs/testlog.json \
	build-asan/meson-logs/testlog-func.json
exit $rc
