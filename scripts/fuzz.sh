#!/bin/bash
# Builds the libFuzzer harnesses in tests/fuzz with clang, ASan and UBSan,
# and runs each for SECONDS (default 60), or for FUZZ_RUNS inputs where
# that is set: a bounded amount of work, whatever CPU it is given
# (scripts/test.sh runs them so, beside the other suites, at idle priority).
# usage: [FUZZ_RUNS=N] scripts/fuzz.sh [SECONDS] [harness...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
secs=${1:-60}
shift || true
out=build-fuzz
mkdir -p "$out"
CFLAGS=(-g -O1 -march=corei7 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
	-D_GNU_SOURCE -Ilib/mem -Ilib/table -Ilib/net -Ilib/http -Ilib/ident -Ilib/flow -Ilib/rules)
# the flow table and all it reads: the normaliser's harness and the
# undecided-bytes property's
flow_src="lib/mem/sl_mem.c lib/table/sl_table.c $(echo lib/flow/sl_flow*.c) $(echo lib/http/sl_*.c) lib/ident/sl_ident.c"
declare -A SRC=(
	[http]="lib/http/sl_http.c lib/http/sl_http_query.c lib/http/sl_chunked.c"
	[norm]="lib/http/sl_http_norm.c lib/http/sl_http_query.c lib/http/sl_http.c"
	[resp]="lib/http/sl_resp.c lib/http/sl_chunked.c"
	[frame]="lib/net/sl_net.c"
	[flow]="$flow_src"
	[decided]="$flow_src"
	# every sl_config*.c, so a new section file cannot be left out of the harness
	[config]="$(echo lib/rules/sl_config*.c) $(echo lib/http/sl_http*.c) lib/ident/sl_ident.c"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(http norm resp frame flow decided config)
for n in "${names[@]}"; do
	libs=()
	[ "$n" = config ] && libs=(-lyaml)
	# built again only when a source (or a header beside one) is newer
	# shellcheck disable=SC2086
	if [ ! -x "$out/fuzz_$n" ] || [ -n "$(find "tests/fuzz/fuzz_$n.c" ${SRC[$n]} \
		lib/*/*.h -newer "$out/fuzz_$n" 2>/dev/null | head -1)" ]; then
		# shellcheck disable=SC2086
		clang "${CFLAGS[@]}" "tests/fuzz/fuzz_$n.c" ${SRC[$n]} "${libs[@]}" \
			-o "$out/fuzz_$n"
	fi
	# FUZZ_BUILD_ONLY=1: built, not run (scripts/test.sh builds them
	# while the sanitizer suites run)
	[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && continue
	mkdir -p "$out/corpus_$n"
	# seeds kept in the tree: read, never written (libFuzzer adds what it
	# finds to the first directory only)
	seeds=
	[ -d "tests/fuzz/seeds/$n" ] && seeds="tests/fuzz/seeds/$n"
	bound=(-max_total_time="$secs")
	[ -n "${FUZZ_RUNS:-}" ] && bound=(-runs="$FUZZ_RUNS")
	echo "== fuzz_$n for ${FUZZ_RUNS:-${secs}s}${FUZZ_RUNS:+ inputs}"
	# the whole log is kept: a finding's own words (the harness's, a
	# sanitizer's) and the seed, without which a harness that keeps state
	# between inputs (fuzz_decided's flow table) cannot be replayed
	"$out/fuzz_$n" "${bound[@]}" -max_len=4096 \
		-artifact_prefix="$out/" \
		-print_final_stats=1 "$out/corpus_$n" $seeds >"$out/fuzz_$n.log" 2>&1 || true
	grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Done' "$out/fuzz_$n.log" || true
	if compgen -G "$out/crash-*" >/dev/null || compgen -G "$out/leak-*" >/dev/null ||
		compgen -G "$out/timeout-*" >/dev/null || compgen -G "$out/oom-*" >/dev/null; then
		grep -E 'INFO: Seed|undecided|runtime error|head [0-9]|server got|==ERROR' \
			"$out/fuzz_$n.log" | head -40 >&2 || true
		echo "fuzz: findings in $out (the log: $out/fuzz_$n.log)" >&2
		exit 1
	fi
done
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
echo "fuzz: no crashes"
