#!/usr/bin/env bash
# The main job: install what is missing, build kinac and libkina_runtime.a
# (only those two targets: the test suite, with its sanitizer and fuzz
# copies of the runtime, is scripts/test.sh's), compile the digits MLP
# (samples/digits/mlp.kir) to an object and a C header, link it with the
# sample's C main and libkina_runtime.a, and run it on the 1797 digits
# (scripts/digits.sh, with the build's kinac).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KINA_BUILD_DIR="$build" KINA_BUILD_TARGETS="kinac kina_runtime" \
  "$root/scripts/build.sh"

KINAC="$build/bin/kinac" KINA_DIGITS_OUT="$build/digits" "$root/scripts/digits.sh"
