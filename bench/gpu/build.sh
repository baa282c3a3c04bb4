#!/usr/bin/env bash
# bench/gpu/build.sh: compiles the GPU benchmark's Kina programs on the
# development machine (the GPU machine has no LLVM, so no kinac) into shared
# libraries that bench/gpu/bench.py loads there with ctypes.
#
#   bench/gpu/build.sh [--kinac PATH] [--gpu-matmul-routes] OUT_DIR
#
# OUT_DIR receives, each `kinac --target=cuda --emit=shared -O2`:
#   kbench.so        bench/gpu/kernels.kir (elementwise chain, softmax,
#                    layer_norm, reduce_sum, matmul rows)
#   kbench_tf32.so   the same with --allow-tf32 (the TF32 matmul row)
#   mlp.so           samples/digits/mlp.kir (the digits MLP)
#   gpt2_f32.so, gpt2_bf16.so   bench/gpu/gpt2_{f32,bf16}.kir
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
while [ $# -gt 1 ]; do
  case "$1" in
    --kinac) kinac="$2"; shift 2 ;;
    *) echo "usage: bench/gpu/build.sh [--kinac PATH] OUT_DIR" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: bench/gpu/build.sh [--kinac PATH] OUT_DIR" >&2; exit 2; }
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
if "$kinac" --help 2>/dev/null | grep -q -- '--gpu-matmul'; then
  compile "$here/kernels.kir" "$out/kbench_kernel.so" --gpu-matmul=kernel
fi
{ echo "kinac: $kinac"; "$kinac" --version 2>&1 | head -1; } > "$out/build.txt"
strip --strip-unneeded "$out"/*.so
echo "bench/gpu/build.sh: wrote $(ls "$out"/*.so | wc -l) libraries to $out"
