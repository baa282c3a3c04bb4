#!/usr/bin/env bash
# Compiles the digits MLP (samples/digits/mlp.kir) with a kinac to an object
# and a C header, links it with the sample's C main and the runtime
# (`kinac --print-link-flags`), and runs it on the 1797 digits. KINAC picks
# the compiler (default: kinac on PATH, as in the Docker image);
# KINA_DIGITS_OUT the folder for the outputs (default: a temporary one).
# Used by demo.sh (with the build's kinac) and the Dockerfile's default
# command (with the installed one).
#
#   scripts/digits.sh [--target=cpu|cuda]     (default cpu; or $KINA_TARGET)
#
# --target=cuda compiles with `kinac --target=cuda` and builds main.c with
# -DKINA_DIGITS_CUDA=1 (its inputs in CUDA managed memory); the link line is
# the same as for the CPU (the runtime loads the CUDA driver at run time).
# Run it on a machine with an NVIDIA GPU; elsewhere the program reports
# status 3 ("CUDA driver not found" / "no CUDA device") and fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kinac="${KINAC:-kinac}"
target="${KINA_TARGET:-cpu}"
for arg in "$@"; do
  case "$arg" in
  --target=*) target="${arg#--target=}" ;;
  *) echo "digits.sh: unknown argument '$arg' (use --target=cpu|cuda)" >&2; exit 2 ;;
  esac
done
case "$target" in
cpu) cflags=() ;;
cuda) cflags=(-DKINA_DIGITS_CUDA=1) ;;
*) echo "digits.sh: unknown target '$target' (cpu or cuda)" >&2; exit 2 ;;
esac
out="${KINA_DIGITS_OUT:-$(mktemp -d)}"
mkdir -p "$out"
run() { echo "+ $*"; "$@"; }
run "$kinac" "$root/samples/digits/mlp.kir" --target="$target" --time-stages -o "$out/mlp.o"
run "$kinac" "$root/samples/digits/mlp.kir" --target="$target" --emit=header -o "$out/mlp.h"
run "${CC:-cc}" -std=c99 -O2 "${cflags[@]}" -I"$out" "$root/samples/digits/main.c" \
  "$out/mlp.o" $("$kinac" --print-link-flags) -o "$out/digits"
run "$out/digits" "$root/samples/digits/data"
