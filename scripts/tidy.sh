#!/usr/bin/env bash
# clang-tidy (clang-tidy 14, the repository's .clang-tidy: bugprone-*, performance-*) over the
# library: every .cpp of the given directories (default: all library directories; not tests/
# or bench/), one file at a time (JOBS=N for more). Prints each distinct warning once (a header's
# warning is reported by every file that includes it) and fails when there is any.
# CUDA sources (.cu) are left out: clang-tidy cannot take nvcc's command line.
# Not part of CI (.ci/run): too slow for a 2-core machine. Measured (2026-12-02, the shared
# 2-core development machine): `tidy.sh core` (10 files) 124 s; algorithms/ (29) 13 min at
# load ~5, cli/ (27) 45 min at load ~10: about 10 s a file idle, so the ~190 library files take
# about half an hour idle and hours under load.
#   bash scripts/tidy.sh                 # all library directories
#   bash scripts/tidy.sh engine results  # some of them
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(cli core algorithms cluster engine results workloads tuner)
[ -f build/compile_commands.json ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for d in "${dirs[@]}"; do
  [ -d "$d" ] || { echo "tidy.sh: no directory '$d'" >&2; exit 2; }
  run-clang-tidy -j "${JOBS:-1}" -p build -quiet "^$root/$d/.*\\.cpp\$" > "$out/$d.txt" 2>&1 || true
done
# One line per distinct warning or error (file:line:col: message [check]), colours stripped.
cat "$out"/*.txt | sed 's/\x1b\[[0-9;]*m//g' | { grep -E '^[^ ].*: (warning|error): ' || true; } | sort -u > "$out/all"
count=$(wc -l < "$out/all")
cat "$out/all"
echo "tidy.sh: $count warning(s) in ${dirs[*]}"
[ "$count" -eq 0 ]
