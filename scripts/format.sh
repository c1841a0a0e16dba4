#!/bin/bash
# clang-format over the project's C sources with its .clang-format.
# usage: scripts/format.sh          rewrite files in place
#        scripts/format.sh --check  list unformatted files and shell
#                                   scripts bash cannot parse, exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' | grep -v '^tests/unit/frames.h$')
if [ "${1:-}" = "--check" ]; then
	# a script no test runs (bench.sh) can break unseen: parse them all
	bad=0
	while read -r sh; do
		if ! err=$(bash -n "$sh" 2>&1); then
			echo "format: $err"
			bad=1
		fi
	done < <(git ls-files --cached --others --exclude-standard '*.sh' .ci/run)
	[ "$bad" = 0 ] || exit 1
	# one clang-format over every file (one process a file took 18 s of
	# the test run); it names each place that would change
	if ! out=$(clang-format --style=file --dry-run --Werror "${files[@]}" 2>&1); then
		grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning)' <<<"$out" | cut -d: -f1 | sort -u |
			sed 's/.*/format: & differs from clang-format (run scripts\/format.sh)/'
		[ -n "$out" ] || echo "format: clang-format failed"
		exit 1
	fi
	exit 0
fi
clang-format --style=file -i "${files[@]}"
