#!/usr/bin/env bash
# Configures and builds dsgd-bench in Release into build/ (idempotent, incremental).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" ${1:+--target "$@"}
