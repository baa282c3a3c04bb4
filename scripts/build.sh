#!/usr/bin/env bash
# Configures and builds kinac and libkina_runtime.a into build/ (or $KINA_BUILD_DIR)
# with $KINA_BUILD_JOBS parallel jobs (default: the number of cores).
# $KINA_BUILD_TARGETS (space-separated CMake targets, e.g. "kinac kina_runtime")
# builds only those; by default everything is built, the tests included.
# Extra arguments go to the CMake configure step.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${KINA_BUILD_TARGETS:-}; do
  targets+=(--target "$t")
done
cmake --build "$build" -j"${KINA_BUILD_JOBS:-$(nproc)}" "${targets[@]}"
