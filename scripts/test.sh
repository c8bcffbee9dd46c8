#!/usr/bin/env bash
# Installs the dependencies, builds (Release, with tests and benchmarks) and runs the
# whole test suite with ctest. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
