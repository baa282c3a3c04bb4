#!/usr/bin/env bash
# bench/gpu/build.sh: compiles the GPU benchmark's Kina programs on the
# development machine (the GPU machine has no LLVM, so no kinac) into shared
# libraries that bench/gpu/bench.py loads there with ctypes.
#
#   bench/gpu/build.sh [--kinac PATH] [--plan] [--tuned RESULTS] OUT_DIR
#
# The tuned column (docs/autotune.md, "cuda"), in two steps across the two
# machines:
#   --plan           OUT_DIR/kbench-plan/: kernels.kir's cuda tuning plan
#                    (kinac --autotune --autotune-plan), which
#                    `kina-run --tune-plan OUT_DIR/kbench-plan/plan.json`
#                    measures on the GPU machine (writing results.json);
#   --tuned RESULTS  OUT_DIR/tuned/kbench.so: kernels.kir built with those
#                    results (kinac --tuning-results RESULTS, the choices
#                    kept in OUT_DIR/tuned/kbench.tuning.json), which
#                    `bench.py OUT_DIR --tuned OUT_DIR/tuned` times beside
#                    the default kbench.so.
#
# OUT_DIR receives, each `kinac --target=cuda --emit=shared -O2`:
#   kbench.so        bench/gpu/kernels.kir (elementwise chain, softmax,
#                    layer_norm, reduce_sum, matmul rows)
#   kbench_tf32.so   the same with --allow-tf32 (the TF32 matmul row)
#   mlp.so           samples/digits/mlp.kir (the digits MLP)
#   gpt2_f32.so, gpt2_bf16.so   bench/gpu/gpt2_{f32,bf16}.kir
#   attention.so     bench/gpu/probe/attention.kir (probe/attention.py)
#   kbench_kernel.so kernels.kir with --gpu-matmul=kernel (matmul on the
#                    generated kernel instead of cuBLASLt), when this kinac
#                    has that option: the measurement issue 12 asks for
#   build.txt        the kinac and its version
# The default kinac is <repo>/build/bin/kinac. Exit status 1 on any
# compile error (the message is kinac's).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kinac="$root/build/bin/kinac"
plan=0
tuned=""
while [ $# -gt 1 ]; do
  case "$1" in
    --kinac) kinac="$2"; shift 2 ;;
    --plan) plan=1; shift ;;
    --tuned) tuned="$2"; shift 2 ;;
    *) echo "usage: bench/gpu/build.sh [--kinac PATH] [--plan] [--tuned RESULTS] OUT_DIR" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: bench/gpu/build.sh [--kinac PATH] [--plan] [--tuned RESULTS] OUT_DIR" >&2; exit 2; }
out="$1"
mkdir -p "$out"
[ -x "$kinac" ] || { echo "bench/gpu/build.sh: no kinac at $kinac" >&2; exit 1; }

compile() { # compile SRC OUT.so [kinac options...]
  local src="$1" so="$2"; shift 2
  echo "  kinac $(basename "$src") $* -> $(basename "$so")"
  "$kinac" "$src" --target=cuda --emit=shared -O2 "$@" -o "$so"
}
compile "$here/kernels.kir" "$out/kbench.so"
compile "$here/kernels.kir" "$out/kbench_tf32.so" --allow-tf32
compile "$root/samples/digits/mlp.kir" "$out/mlp.so"
compile "$here/gpt2_f32.kir" "$out/gpt2_f32.so"
compile "$here/gpt2_bf16.kir" "$out/gpt2_bf16.so"
compile "$here/probe/attention.kir" "$out/attention.so"
if "$kinac" --help 2>/dev/null | grep -q -- '--gpu-matmul'; then
  compile "$here/kernels.kir" "$out/kbench_kernel.so" --gpu-matmul=kernel
fi
if [ "$plan" = 1 ]; then
  echo "  kinac kernels.kir --autotune --autotune-plan -> kbench-plan/"
  rm -rf "$out/kbench-plan"
  "$kinac" "$here/kernels.kir" --target=cuda -O2 --autotune \
    --autotune-plan "$out/kbench-plan"
  strip --strip-unneeded "$out"/kbench-plan/*.so
fi
if [ -n "$tuned" ]; then
  mkdir -p "$out/tuned"
  rm -f "$out/tuned/kbench.tuning.json"
  compile "$here/kernels.kir" "$out/tuned/kbench.so" \
    --tuning-results "$tuned" --tuning-cache "$out/tuned/kbench.tuning.json"
  strip --strip-unneeded "$out/tuned/kbench.so"
fi
{ echo "kinac: $kinac"; "$kinac" --version 2>&1 | head -1; } > "$out/build.txt"
strip --strip-unneeded "$out"/*.so
echo "bench/gpu/build.sh: wrote $(ls "$out"/*.so | wc -l) libraries to $out"
