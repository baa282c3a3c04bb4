#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every ctest suite
# (GoogleTest unit and runtime tests, FileCheck golden tests, end-to-end and
# bad-input tests, the digits sample).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KINA_BUILD_DIR="$build" "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j"$(nproc)"
