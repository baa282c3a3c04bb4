#!/usr/bin/env bash
# Builds, on the development machine, everything scripts/gpu-check.sh runs on
# a GPU machine (which has Python 3 and NumPy but no LLVM, MLIR or CMake):
#
#   scripts/gpu-artefacts.sh [--difftest-seeds A:B] BUILD_DIR OUT_DIR
#
# BUILD_DIR is a configured build of this tree (scripts/build.sh); the
# script builds the targets it needs there. OUT_DIR receives (x86-64 Linux
# binaries, self-contained; OUT_DIR.tar.xz, at most 60 MiB, travels with the tree):
#   bin/runtime_tests, bin/entry_stress, bin/mlir_gpu_test, bin/kina-run,
#   tests/runtime/linking/cpu_app         the runtime's GPU and CPU checks
#   gpu/axpy_cuda.so                      a hand-made cuda shared library
#   gpu/tools/                            run_conformance.py, kina_values.py,
#                                         check_kina_run_cuda.py
#   gpu/conformance/                      EVERY conformance case compiled
#                                         with `kinac --target=cuda
#                                         --emit=shared` (libs/, cases/ with
#                                         the inputs and expected outputs,
#                                         index.json; run_conformance.py
#                                         --build-only)
#   gpu/e2e/                              the end-to-end cases, exported in
#                                         the conformance format and compiled
#                                         the same way (run_e2e.py
#                                         --export-cases)
#   gpu/tune/                             a cuda tuning plan (kinac
#                                         --autotune-plan: candidates and
#                                         plan.json) that gpu-check.sh
#                                         measures with kina-run --tune-plan
#   gpu/digits/                           the digits sample compiled for cuda
#                                         (digits, data/)
#   gpu/python/                           the kina package's GPU tests:
#                                         tests/python/ops.kir compiled for
#                                         cuda (ops_cuda.so), python/kina,
#                                         test_cuda.py, test_compile.py,
#                                         multi_gpu_check.py (--multi),
#                                         cffi wheels (wheels/)
#   gpu/difftest/                         the random programs of the
#                                         differential tests for seeds A:B
#                                         (--difftest-seeds, default 0:256)
#                                         compiled for cuda, with their
#                                         inputs and expected results
#                                         (difftest.py --build-only; about
#                                         20 KiB a program); gpu/tools/ gets
#                                         difftest.py and its modules
# The runtime artefacts come first; then, if this kinac does not compile
# --target=cuda, the script stops with "gpu-artefacts: error: ..." and exit
# status 3 (gpu-check.sh then reports the GPU suites as missing). Exit 0 when
# everything was built; 1 on any other failure (a case that does not compile
# for cuda is recorded in index.json and fails on the GPU, it does not stop
# the build; the count is printed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
difftest_seeds="${KINA_DIFFTEST_GPU_SEEDS:-0:256}"
if [[ "${1:-}" == --difftest-seeds ]]; then
  difftest_seeds="${2:?--difftest-seeds needs A:B}"
  shift 2
elif [[ "${1:-}" == --difftest-seeds=* ]]; then
  difftest_seeds="${1#--difftest-seeds=}"
  shift
fi
if (($# != 2)) || [[ ! "$difftest_seeds" =~ ^[0-9]+:[0-9]+$ ]]; then
  echo "usage: scripts/gpu-artefacts.sh [--difftest-seeds A:B] BUILD_DIR OUT_DIR" >&2
  exit 1
fi
build="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
jobs="${KINA_JOBS:-2}"
# Python with NumPy (the development machine's /usr/bin/python3 by default).
py="${KINA_E2E_PYTHON:-/usr/bin/python3}"
say() { echo "gpu-artefacts: $*"; }
die() {
  echo "gpu-artefacts: error: $1" >&2
  exit "${2:-1}"
}

# The kina package's GPU tests (tests/python/test_cuda.py, test_compile.py)
# in DIR: ops.kir compiled with --target=cuda (ops_cuda.so), the package
# python/kina, the two test files (run as scripts: the GPU machine may lack
# pytest), and cffi wheels for CPython 3.10 to 3.13 (wheels/, from
# $KINA_CFFI_WHEELS or `pip download`), which gpu-check.sh unpacks where
# the GPU machine's Python lacks cffi.
python_artefacts() { # python_artefacts DIR
  local dir="$1" v
  rm -rf "$dir"
  mkdir -p "$dir/wheels"
  "$kinac" "$root/tests/python/ops.kir" --target=cuda --emit=shared \
    -o "$dir/ops_cuda.so" || return 1
  cp -r "$root/python/kina" "$dir/"
  rm -rf "$dir/kina/__pycache__"
  cp "$root/tests/python/test_cuda.py" "$root/tests/python/test_compile.py" \
    "$root/tests/python/multi_gpu_check.py" "$dir/"
  if [[ -n "${KINA_CFFI_WHEELS:-}" ]]; then
    cp "$KINA_CFFI_WHEELS"/*.whl "$dir/wheels/"
  else
    for v in 3.10 3.11 3.12 3.13; do
      "$py" -m pip download --quiet --no-cache-dir --only-binary=:all: \
        --python-version "$v" --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 -d "$dir/wheels" cffi ||
        say "pip download of cffi for Python $v failed: the GPU machine's Python needs cffi"
    done
  fi
}

say "building the runtime's test programs in $build"
nice -n 5 cmake --build "$build" -j"$jobs" --target kinac kina-run \
  runtime_tests entry_stress mlir_gpu_test kina_axpy_cuda >/dev/null ||
  die "the build of the test programs failed"
# cpu_app is linked by the runtime.linking test.
(cd "$build" && ctest -R '^runtime\.linking$' >/dev/null) ||
  die "ctest -R runtime.linking failed in $build (it links cpu_app)"

rm -rf "$out/bin" "$out/gpu" "$out/tests"
mkdir -p "$out/bin" "$out/tests/runtime/linking" "$out/gpu/tools"
cp "$build/bin/runtime_tests" "$build/bin/entry_stress" \
  "$build/bin/mlir_gpu_test" "$build/bin/kina-run" "$out/bin/"
cp "$build/tests/runtime/linking/cpu_app" "$out/tests/runtime/linking/"
cp "$build/tests/runtime/mlir_gpu/axpy_cuda.so" "$out/gpu/"
cp "$root/tests/conformance/run_conformance.py" \
  "$root/tests/conformance/kina_values.py" \
  "$root/tests/difftest/difftest.py" "$root/tests/difftest/kgen.py" \
  "$root/tests/difftest/kref.py" "$root/tests/difftest/known.py" \
  "$root/tests/runtime/mlir_gpu/check_kina_run_cuda.py" "$out/gpu/tools/"
say "runtime artefacts: $(du -sh "$out" | cut -f1)"

kinac="$build/bin/kinac"
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf 'func @f(%%x: f32[N]) -> f32[N] {\n  %%y = exp %%x\n  return %%y\n}\n' \
  >"$probe/probe.kir"
if ! "$kinac" "$probe/probe.kir" --target=cuda --emit=shared \
  -o "$probe/probe.so" >"$probe/log" 2>&1; then
  die "this kinac ($kinac) does not compile --target=cuda: $(head -3 "$probe/log" | tr '\n' ' ')
gpu-artefacts: the runtime artefacts are in $out; the conformance, e2e and
gpu-artefacts: digits artefacts for the GPU are NOT (gpu-check.sh reports them missing)" 3
fi

problems=0
say "compiling every conformance case for --target=cuda"
if ! "$py" "$root/tests/conformance/run_conformance.py" --kinac "$kinac" \
  --target=cuda --build-only "$out/gpu/conformance" \
  --workdir "$probe/conformance" -j "$jobs"; then
  problems=$((problems + 1))
fi
say "compiling the end-to-end cases for --target=cuda"
"$py" "$root/tests/e2e/run_e2e.py" --kinac "$kinac" \
  --runtime "$build/lib/libkina_runtime.a" --workdir "$probe/e2e-export" \
  --export-cases "$probe/e2e-cases" >/dev/null ||
  die "run_e2e.py --export-cases failed"
if ! "$py" "$root/tests/conformance/run_conformance.py" --kinac "$kinac" \
  --target=cuda --build-only "$out/gpu/e2e" --cases "$probe/e2e-cases" \
  --workdir "$probe/e2e" -j "$jobs"; then
  problems=$((problems + 1))
fi

say "compiling the differential tests' programs (seeds $difftest_seeds) for --target=cuda"
if ! "$py" "$root/tests/difftest/difftest.py" --kinac "$kinac" \
  --target=cuda --seeds "$difftest_seeds" --batch 32 -j "$jobs" \
  --build-only "$out/gpu/difftest" --workdir "$probe/difftest"; then
  problems=$((problems + 1))
fi

say "compiling the digits sample for --target=cuda"
mkdir -p "$out/gpu/digits"
"$kinac" "$root/samples/digits/mlp.kir" --target=cuda -o "$probe/mlp.o" ||
  die "kinac --target=cuda failed on samples/digits/mlp.kir"
"$kinac" "$root/samples/digits/mlp.kir" --target=cuda --emit=header \
  -o "$probe/mlp.h"
# shellcheck disable=SC2046 # the link flags are words
"${CC:-cc}" -std=c99 -O2 -DKINA_DIGITS_CUDA=1 -I"$probe" \
  "$root/samples/digits/main.c" "$probe/mlp.o" $("$kinac" --print-link-flags) \
  -o "$out/gpu/digits/digits"
cp -r "$root/samples/digits/data" "$out/gpu/digits/data"

say "compiling bench/gpu's programs for --target=cuda"
"$root/bench/gpu/build.sh" --kinac "$kinac" "$out/gpu/bench" >/dev/null ||
  die "bench/gpu/build.sh failed"
cp "$root/bench/gpu/bench.py" "$out/gpu/tools/"
say "building a cuda tuning plan (tests/autotune/check_autotune_cuda.py)"
"$py" "$root/tests/autotune/check_autotune_cuda.py" --kinac "$kinac" \
  --kina-run "$build/bin/kina-run" --build-plan "$out/gpu/tune" >/dev/null ||
  die "the cuda tuning plan failed to build"
strip --strip-unneeded "$out"/gpu/tune/*.so
cp "$root/tests/autotune/check_autotune_cuda.py" "$out/gpu/tools/"

say "compiling the Python package's test library for --target=cuda"
python_artefacts "$out/gpu/python" || die "the Python package's artefacts failed"

# Strip the libraries' symbol tables (the dynamic symbols stay): each
# carries a copy of the runtime.
find "$out/gpu" -name '*.so' -exec strip --strip-unneeded {} +
size=$(du -sb "$out" | cut -f1)
say "artefacts in $out: $((size / 1024 / 1024)) MiB" \
  "($(find "$out/gpu" -name '*.so' | wc -l) shared libraries)"
# What travels with the tree is the xz archive beside OUT_DIR (the vector
# and scalar twins of the cuda kernels make the folder itself larger than
# the 64 MiB a device call carries); gpu-check.sh takes either.
tar -C "$out" -cf - . | xz -T0 -3 >"$out.tar.xz" ||
  die "could not write $out.tar.xz"
packed=$(stat -c %s "$out.tar.xz")
say "archive $out.tar.xz: $((packed / 1024 / 1024)) MiB"
if ((packed > 60 * 1024 * 1024)); then
  die "the archive takes $((packed / 1024 / 1024)) MiB, more than the 60 MiB that travel with the tree"
fi
if ((problems)); then
  say "some cases did not build for cuda (see FAIL lines above): they fail on the GPU"
fi
say "done"
