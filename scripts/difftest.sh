#!/usr/bin/env bash
# Differential random testing of kinac (docs/reliability.md, "Differential
# testing"): random valid Kina programs compiled with `kinac --emit=shared`,
# run with kina-run and compared with a NumPy reference written from the
# spec; mutated invalid programs checked for located errors; failures reduced.
#
#   scripts/difftest.sh [--seconds N | --seeds A:B] [--target=cpu|cuda]
#                       [--kinac PATH] [--kina-run PATH] [--out DIR]
#                       [--no-known]
#                       [other tests/difftest/difftest.py options]
#
# Default: --seconds 60, the kinac and kina-run of build/ (or
# $KINA_BUILD_DIR), --out difftest-out/ (each failure, reduced, in a folder
# there: case.kir, inputs, expected outputs, the original program). The
# known bugs of tests/difftest/known.py are reported as XFAIL unless
# --no-known. Prints `N passed, N failed` and the reduced failures; exits 1
# if any (not known) failure was found.
# --target=cuda compiles with `kinac --target=cuda`; where this machine has
# no CUDA driver (libcuda.so.1), the programs are compiled and loaded by
# kina-run only (--compile-only: its status 3 "CUDA driver not found"
# counts as checked), so compile failures are found and reduced, results
# are not compared. For a GPU machine without kinac, build with
# `difftest.py --build-only` and run there with `--prebuilt`
# (scripts/gpu-artefacts.sh and scripts/gpu-check.sh do both).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KINA_BUILD_DIR:-$root/build}"
kinac="$build/bin/kinac"
kina_run="$build/bin/kina-run"
out="difftest-out"
known=(--known)
budget=(--seconds 60)
target=cpu
rest=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds|--seeds) budget=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --kinac) kinac="${2:?--kinac needs a path}"; shift 2 ;;
    --kina-run) kina_run="${2:?--kina-run needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --no-known) known=(); shift ;;
    --target=*) target="${1#--target=}"; shift ;;
    --target) target="${2:?--target needs cpu or cuda}"; shift 2 ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) rest+=("$1"); shift ;;
  esac
done
for tool in "$kinac" "$kina_run"; do
  if [[ ! -x "$tool" ]]; then
    echo "difftest.sh: error: $tool is not an executable (build first: scripts/build.sh)" >&2
    exit 1
  fi
done
mode=(--target "$target")
if [[ "$target" == cuda ]] && [[ -z "${KINA_CUDA_DRIVER:-}" ]] &&
  ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "difftest.sh: no CUDA driver here: --target=cuda programs are" \
    "compiled and loaded, not run (--compile-only)" >&2
  mode+=(--compile-only)
fi
exec /usr/bin/python3 "$root/tests/difftest/difftest.py" --kinac "$kinac" \
  --kina-run "$kina_run" "${budget[@]}" --out "$out" "${known[@]}" \
  "${mode[@]}" \
  --batch 16 -v "${rest[@]}"
