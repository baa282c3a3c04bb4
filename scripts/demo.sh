#!/usr/bin/env bash
# The main job: install what is missing, build kinac and libkina_runtime.a
# (only those two targets: the test suite, with its sanitizer and fuzz
# copies of the runtime, is scripts/test.sh's), compile the digits MLP
# (samples/digits/mlp.kir) to an object and a C header, link it with the
# sample's C main and libkina_runtime.a, and run it on the 1797 digits
# (scripts/digits.sh, with the build's kinac).
#
#   scripts/demo.sh [--target=cpu|cuda]
#
# --target=cuda compiles the sample with `kinac --target=cuda` and runs it on
# the GPU (a machine with an NVIDIA GPU, its driver, and the CUDA Toolkit's
# ptxas for kinac); it prints the same `digits:` line as the CPU build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
target=cpu
for arg in "$@"; do
  case "$arg" in
  --target=cpu | --target=cuda) target="${arg#--target=}" ;;
  *) echo "demo.sh: unknown argument '$arg' (use --target=cpu|cuda)" >&2; exit 2 ;;
  esac
done
"$root/scripts/install-deps.sh"
KINA_BUILD_DIR="$build" KINA_BUILD_TARGETS="kinac kina_runtime" \
  "$root/scripts/build.sh"

KINAC="$build/bin/kinac" KINA_DIGITS_OUT="$build/digits-$target" \
  "$root/scripts/digits.sh" --target="$target"
