#!/bin/bash
# Sets everything up, builds, and runs every test suite once: with the
# whole program built with ASan and UBSan, unit (cmocka), app (the data
# path in process), func (packets on net_pcap, the CLI, the tools) and
# end-to-end (namespaces, af_packet, curl, wrk, nginx, Redis); on the
# optimised build the accuracy test, whose figures are its speed's; the
# two-thread race test under ThreadSanitizer; and the fuzzers for a
# bounded time. Exits non-zero on any failure. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

# build DIR [TARGET...] [-- MESON-OPTION...]: every target where none is named
build() {
	local dir=$1 targets=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		targets+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" "${targets[@]}" >/dev/null
}

summary() {
	# meson's own summary is not a line CI reads: count from its log.
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
bad = int(sys.argv.pop(1))
p, f = 7 - bad, bad  # format, cycles, deps, docs and the three fuzz groups count as tests
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
# the package (func/package) is made from the optimised tree the suites
# use, not a third build of it
export SLUICE_PKG_BUILD=build
scripts/format.sh --check || { rc=1; fmt=1; }
# no dependency cycle between C files (scripts/cycles.allow is empty)
/usr/bin/python3 scripts/check-cycles.py || { rc=1; fmt=$((fmt + 1)); }
# no include beyond the folder walls each meson.build declares
/usr/bin/python3 scripts/check-deps.py || { rc=1; fmt=$((fmt + 1)); }
# the optimised tree and the sanitizer tree, built side by side before
# the accuracy test: built during it, at the lowest priority, the
# sanitizer tree got the CPU the test's clients left, and the suites
# waited a minute for it after the test
build_asan() {
	build build-asan -- -Dbuildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Db_lto=false
}
# of the optimised tree, what runs before the suites: the appliance (the
# accuracy test, the documents' check); not the test programs, which the
# sanitizer tree runs and which, each linked with LTO, were 34 s of the
# tree's 57 from a fresh clone, nor the benchmark, which the package
# (func/package, at the lowest priority beside the suites) builds
build build app/sluice/sluice -- \
	--prefix=/usr --buildtype=release &
rel_pid=$!
build_asan
wait "$rel_pid"
# the documents against the code: the config reference against the parser,
# every YAML block through --check-config, the telemetry reference against
# the commands, and no work-log label anywhere
/usr/bin/python3 scripts/check-docs.py build/app/sluice/sluice || { rc=1; fmt=$((fmt + 1)); }
# the sanitizer tree's unit tests (cmocka, no appliance) at the lowest
# priority while the accuracy test runs: seconds of CPU, none of its
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	nice -n 19 meson test -C build-asan --no-rebuild --suite unit --print-errorlogs \
	>build-asan.log 2>&1 &
asan_pid=$!
# Beside the accuracy test and the sanitizer suites: the ThreadSanitizer
# tree and the race test, and the fuzzers. The builds at the lowest
# priority, the fuzzers at idle priority (they run only on a CPU nothing
# else wants) and bounded by inputs, not seconds, so that what they cover
# does not depend on what the suites left them: on two CPUs the suites
# wait on clients and timers a third of the time. Started after the
# accuracy test instead, they slowed the serial suites by 40 s.
side() {
	if [ ! -f build-tsan/build.ninja ]; then
		meson setup build-tsan -Dbuildtype=debug -Db_sanitize=thread \
			-Db_lundef=false -Db_lto=false "-Dc_args=-DRTE_USE_C11_MEM_MODEL -Wno-tsan" >/dev/null
	fi
	nice -n 19 ninja -C build-tsan tests/test_race >/dev/null
	FUZZ_BUILD_ONLY=1 nice -n 19 scripts/fuzz.sh 0 >/dev/null
	# what lcores share (rings, the policy under RCU, counters, the
	# telemetry table) under ThreadSanitizer: the race test, a worker
	# thread and the control path at once, with reloads (tests/tsan.supp
	# says why each suppression is there)
	local r=0
	TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$PWD/tests/tsan.supp" \
		nice -n 19 meson test -C build-tsan --no-rebuild race --print-errorlogs \
		--logbase testlog-tsan || r=1
	# the target normaliser decides what every path rule sees; the stream
	# normaliser, which decides what bytes are a request at all, with the
	# undecided-bytes property (no byte a lenient server acts on reaches
	# it before sluice decided the request it belongs to); then the head
	# parser, the response framing, the frame parser and the config
	# loader. A finding fails the run. Sized to about 150 s of one CPU:
	# even at idle priority a busy second CPU slowed the suites' clients
	# (e2e/ops 19.9 s alone, 24.7 s beside an idle-priority loop), and
	# the fuzzers were what kept it busy, for 7 of the suites' 10 minutes.
	# Longer runs are scripts/fuzz.sh's, for when a harness's code changed.
	local fz=(chrt --idle 0 env)
	"${fz[@]}" FUZZ_RUNS=3300000 scripts/fuzz.sh 0 norm || r=$((r + 2))
	"${fz[@]}" FUZZ_RUNS=400000 scripts/fuzz.sh 0 flow decided || r=$((r + 4))
	"${fz[@]}" FUZZ_RUNS=700000 scripts/fuzz.sh 0 http || r=$((r + 8))
	"${fz[@]}" FUZZ_RUNS=350000 scripts/fuzz.sh 0 resp || r=$((r + 8))
	"${fz[@]}" FUZZ_RUNS=4400000 scripts/fuzz.sh 0 frame || r=$((r + 8))
	"${fz[@]}" FUZZ_RUNS=50000 scripts/fuzz.sh 0 config || r=$((r + 8))
	return $r
}
side >build-side.log 2>&1 &
side_pid=$!
# every suite runs once, below, under ASan and UBSan, but the one whose
# figures are its speed's: accuracy, on the optimised build
meson test -C build --print-errorlogs --no-rebuild --suite accuracy \
	--logbase testlog-accuracy || rc=1
early_rc=0
wait "$asan_pid" || early_rc=1
cat build-asan.log
[ "$early_rc" -eq 0 ] || rc=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Beside the suites below, at the lowest priority: the tests that start no
# appliance on the network (the package, the tools, the benchmark's own
# checks), which a loaded CPU slows but does not skew.
ASAN_OPTIONS=detect_leaks=1 nice -n 19 meson test -C build-asan --no-rebuild \
	--suite side --print-errorlogs --logbase testlog-side >build-side-suite.log 2>&1 &
side_suite_pid=$!
# leaks checked in the appliance and the tools too: EAL's memory is its
# own (hugepage or --no-huge mmap, which LeakSanitizer does not track), and
# whatever sluice allocates it frees on the way out (a leak fails the test
# through the exit code: every suite checks that sluice stops with 0).
# One at a time (tests/meson.build says why).
ASAN_OPTIONS=detect_leaks=1 meson test -C build-asan --suite app --suite func \
	--suite e2e --print-errorlogs --logbase testlog-func || rc=1
wait "$side_suite_pid" || rc=1
cat build-side-suite.log
side_rc=0
wait "$side_pid" || side_rc=$?
cat build-side.log
fz=0
# the race test counts as a test through its log; each fuzz group as one
[ $((side_rc & 1)) -ne 0 ] && rc=1
for bit in 2 4 8; do
	[ $((side_rc & bit)) -ne 0 ] && { rc=1; fz=$((fz + 1)); }
done
summary "$((fmt + fz))" \
	build/meson-logs/testlog-accuracy.json build-asan/meson-logs/testlog.json \
	build-asan/meson-logs/testlog-func.json build-asan/meson-logs/testlog-side.json \
	build-tsan/meson-logs/testlog-tsan.json
exit $rc
