#!/usr/bin/env bash
# Checks libkina_runtime.a's GPU path on a machine with an NVIDIA GPU and its
# driver, from a build directory made elsewhere and carried there (no LLVM,
# MLIR, CMake or ctest needed on the GPU machine):
#
#   scripts/gpu-check.sh [BUILD_DIR]        (default: build/ beside scripts/)
#
# Runs, each as a step with PASS, FAIL or SKIP:
#   1. runtime_tests' GPU suites (GpuAlloc*, GpuDriverEnv*, CudaDriver*): with
#      a GPU none of them may skip (a skip there means the runtime did not find
#      the driver or the device); then the whole runtime_tests binary.
#   2. entry_stress: kinac-compiled entry points under 8-thread load (CPU).
#   3. The CPU program of the runtime.linking test (tests/runtime/linking/
#      cpu_app, linked with `kinac --print-link-flags`): `readelf -d` names no
#      CUDA library, it computes its CPU result, and its one GPU allocation
#      (the driver loaded with dlopen) succeeds.
# Then prints a summary. Exit status: 0 when every step passed (or the
# machine has no GPU: then everything is skipped with a message and the
# status is 0), 1 when any step failed, 2 when the build directory lacks the
# binaries (build with scripts/build.sh and run `ctest -R runtime.linking`
# first, which links cpu_app). The files needed from BUILD_DIR:
#   bin/runtime_tests, bin/entry_stress, tests/runtime/linking/cpu_app
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" 2>/dev/null && pwd)" || {
  echo "gpu-check: no build directory ${1:-$root/build}" >&2
  exit 2
}

runtime_tests="$build/bin/runtime_tests"
entry_stress="$build/bin/entry_stress"
cpu_app="$build/tests/runtime/linking/cpu_app"
missing=()
for f in "$runtime_tests" "$entry_stress" "$cpu_app"; do
  [[ -x "$f" ]] || missing+=("$f")
done
if ((${#missing[@]})); then
  echo "gpu-check: missing in $build: ${missing[*]}" >&2
  echo "gpu-check: build with scripts/build.sh, then run" \
    "'ctest -R runtime.linking' in the build directory (links cpu_app)" >&2
  exit 2
fi

# --- Is there a GPU and a driver? -------------------------------------------
driver=""
if [[ -n "${KINA_CUDA_DRIVER:-}" ]]; then
  driver="$KINA_CUDA_DRIVER"
elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  driver="libcuda.so.1"
else
  ld_path="${LD_LIBRARY_PATH:-}"
  for dir in ${ld_path//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 \
    /usr/lib/aarch64-linux-gnu /usr/local/nvidia/lib64; do
    [[ -e "$dir/libcuda.so.1" ]] && driver="$dir/libcuda.so.1" && break
  done
fi
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c .)
  nvidia-smi --query-gpu=index,name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | sed 's/^/gpu-check: GPU /'
elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  gpus=$(compgen -G '/dev/nvidia[0-9]*' | wc -l)
fi
if [[ -z "$driver" || "$gpus" -eq 0 ]]; then
  echo "gpu-check: SKIPPED: no NVIDIA GPU with its driver here" \
    "(driver library: ${driver:-not found}; GPUs seen: $gpus)"
  exit 0
fi
echo "gpu-check: driver $driver, $gpus GPU(s), build $build"

# --- Steps ------------------------------------------------------------------
declare -a names results
log_dir="$(mktemp -d)"
trap 'rm -rf "$log_dir"' EXIT
step=0

record() { # record NAME RESULT [DETAIL]
  names+=("$1")
  results+=("$2${3:+: $3}")
  echo "gpu-check: [$2] $1${3:+: $3}"
}

run_step() { # run_step NAME LOG COMMAND...; returns the command's status
  local name="$1" log="$2"
  shift 2
  echo "gpu-check: --- $name: $*"
  "$@" >"$log" 2>&1
  local status=$?
  tail -n 25 "$log"
  return $status
}

# 1. The GPU suites of runtime_tests: none may skip here.
step=$((step + 1))
log="$log_dir/gpu.log"
if run_step "runtime_tests GPU suites" "$log" "$runtime_tests" \
  --gtest_filter='GpuAlloc*:GpuDriverEnv*:CudaDriver*'; then
  skipped=$(grep -c '^\[  SKIPPED \] Gpu' "$log")
  if [[ "$skipped" -ne 0 ]]; then
    record "runtime_tests GPU suites" FAIL \
      "$skipped test(s) skipped on a GPU machine: $(grep -m1 'no usable CUDA GPU' "$log")"
  else
    record "runtime_tests GPU suites" PASS \
      "$(grep -m1 '^\[  PASSED  \]' "$log")"
  fi
else
  record "runtime_tests GPU suites" FAIL "$(grep '^\[  FAILED  \]' "$log" | head -5 | tr '\n' ' ')"
fi

step=$((step + 1))
log="$log_dir/all.log"
if run_step "runtime_tests (all)" "$log" "$runtime_tests"; then
  record "runtime_tests (all)" PASS "$(grep -m1 '^\[  PASSED  \]' "$log")"
else
  record "runtime_tests (all)" FAIL "$(grep '^\[  FAILED  \]' "$log" | head -5 | tr '\n' ' ')"
fi

# 2. Compiled entry points under load.
step=$((step + 1))
log="$log_dir/entry.log"
if run_step "entry_stress" "$log" "$entry_stress"; then
  record "entry_stress" PASS "$(grep -m1 '^\[  PASSED  \]' "$log")"
else
  record "entry_stress" FAIL "$(grep '^\[  FAILED  \]' "$log" | head -5 | tr '\n' ' ')"
fi

# 3. The CPU program: no CUDA library linked, CPU result, GPU allocation.
step=$((step + 1))
if command -v readelf >/dev/null 2>&1; then
  needed=$(readelf -d "$cpu_app" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  if grep -Eq 'lib(cuda|cudart|nv)' <<<"$needed"; then
    record "cpu_app links no CUDA library" FAIL "NEEDED: $needed"
  else
    record "cpu_app links no CUDA library" PASS "NEEDED: $needed"
  fi
else
  record "cpu_app links no CUDA library" SKIP "no readelf on this machine"
fi
log="$log_dir/cpu_app.log"
if run_step "cpu_app" "$log" "$cpu_app" &&
  grep -qx 'cpu: ok' "$log" && grep -qx 'gpu: 0 allocated' "$log"; then
  record "cpu_app runs (CPU result, GPU allocation)" PASS
else
  record "cpu_app runs (CPU result, GPU allocation)" FAIL "$(tr '\n' ' ' <"$log")"
fi

# --- Summary ----------------------------------------------------------------
echo
echo "gpu-check summary ($gpus GPU(s), driver $driver):"
failed=0
for i in "${!names[@]}"; do
  printf '  %-45s %s\n' "${names[$i]}" "${results[$i]}"
  [[ "${results[$i]}" == FAIL* ]] && failed=$((failed + 1))
done
if ((failed)); then
  echo "gpu-check: $failed step(s) FAILED"
  exit 1
fi
echo "gpu-check: all steps passed"
exit 0
