#!/usr/bin/env bash
# Compiles the digits MLP (samples/digits/mlp.kir) with a kinac to an object
# and a C header, links it with the sample's C main and the runtime
# (`kinac --print-link-flags`), and runs it on the 1797 digits. KINAC picks
# the compiler (default: kinac on PATH, as in the Docker image);
# KINA_DIGITS_OUT the folder for the outputs (default: a temporary one).
# Used by demo.sh (with the build's kinac) and the Dockerfile's default
# command (with the installed one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kinac="${KINAC:-kinac}"
out="${KINA_DIGITS_OUT:-$(mktemp -d)}"
mkdir -p "$out"
run() { echo "+ $*"; "$@"; }
run "$kinac" "$root/samples/digits/mlp.kir" --time-stages -o "$out/mlp.o"
run "$kinac" "$root/samples/digits/mlp.kir" --emit=header -o "$out/mlp.h"
run "${CC:-cc}" -std=c99 -O2 -I"$out" "$root/samples/digits/main.c" "$out/mlp.o" \
  $("$kinac" --print-link-flags) -o "$out/digits"
run "$out/digits" "$root/samples/digits/data"
