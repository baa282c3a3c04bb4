#!/usr/bin/env bash
# Configures and builds kinac and libkina_runtime.a into build/ (or $KINA_BUILD_DIR)
# with $KINA_BUILD_JOBS parallel jobs (default: the number of cores).
# Extra arguments go to the CMake configure step.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"${KINA_BUILD_JOBS:-$(nproc)}"
