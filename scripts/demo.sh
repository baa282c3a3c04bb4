#!/usr/bin/env bash
# The main job: install what is missing, build kinac, compile the digits MLP
# (samples/digits/mlp.kir) to an object and a C header, link it with the
# sample's C main and libkina_runtime.a, and run it on the 1797 digits.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
KINA_BUILD_DIR="$build" "$root/scripts/build.sh"

out="$build/digits"
mkdir -p "$out"
run() { echo "+ $*"; "$@"; }
run "$build/bin/kinac" "$root/samples/digits/mlp.kir" --time-stages -o "$out/mlp.o"
run "$build/bin/kinac" "$root/samples/digits/mlp.kir" --emit=header -o "$out/mlp.h"
run cc -std=c99 -O2 -I"$out" "$root/samples/digits/main.c" "$out/mlp.o" \
  $("$build/bin/kinac" --print-link-flags) -o "$out/digits"
run "$out/digits" "$root/samples/digits/data"
