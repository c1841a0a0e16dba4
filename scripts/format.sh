#!/bin/bash
# clang-format over the project's C sources with its .clang-format.
# usage: scripts/format.sh          rewrite files in place
#        scripts/format.sh --check  list unformatted files, exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' | grep -v '^tests/unit/frames.h$')
if [ "${1:-}" = "--check" ]; then
	bad=0
	for f in "${files[@]}"; do
		if ! clang-format --style=file "$f" | cmp -s - "$f"; then
			echo "format: $f differs from clang-format (run scripts/format.sh)"
			bad=1
		fi
	done
	exit $bad
fi
clang-format --style=file -i "${files[@]}"
