#!/usr/bin/env bash
# Checks the GPU path on a machine with an NVIDIA GPU and its driver, from a
# build directory or an artefact directory made elsewhere and carried there
# (no LLVM, MLIR, CMake or ctest needed on the GPU machine; Python 3 with
# NumPy for the Python steps):
#
#   scripts/gpu-check.sh [--difftest-seeds A:B] [--difftest-only]
#                        [--python-only] [--multi] [DIR]
#                                  (default DIR: build/ beside scripts/)
#
# DIR is a build directory, what `scripts/gpu-artefacts.sh
# BUILD_DIR DIR` wrote (the same bin/ and tests/ layout plus gpu/ with the
# cuda-compiled suites), or its archive DIR.tar.xz, unpacked to a temporary
# folder. Runs, each as a step with PASS, FAIL or SKIP:
#   1. runtime_tests' GPU suites (GpuAlloc*, GpuLaunch*, GpuNoDriver*,
#      GpuDriverEnv*, CudaDriver*): with a GPU none of them may skip (a skip
#      there means the runtime did not find the driver or the device); then
#      the 8-thread launch test and the leak test (10^4 alloc/launch/free
#      calls, registry and cuMemGetInfo flat) each as its own step; then the
#      whole runtime_tests binary.
#   2. entry_stress: kinac-compiled entry points under 8-thread load (CPU).
#   3. The CPU program of the runtime.linking test (tests/runtime/linking/
#      cpu_app, linked with `kinac --print-link-flags`): `readelf -d` names no
#      CUDA library, it computes its CPU result, and its one GPU allocation
#      (the driver loaded with dlopen) succeeds.
#   4. mlir_gpu_test: MLIR-lowered GPU code (mgpu* calls as MLIR 22 emits
#      them) through the runtime's call frame, 8 threads included.
#   5. kina-run on a cuda shared library (gpu/axpy_cuda.so): inputs copied
#      into managed memory, exact result.
#   5b. cuda autotuning's measuring step: kina-run --tune-plan on the plan
#      gpu-artefacts.sh built (gpu/tune), every candidate measured, the GPU
#      named (tests/autotune/check_autotune_cuda.py --measure-plan); SKIP
#      when kina-run --gpu-info finds no GPU.
#   6. The digits sample compiled for cuda (gpu/digits): its `digits:` line
#      and exit status 0.
#   7. The end-to-end cases and 8. the WHOLE conformance suite, compiled for
#      cuda (gpu/e2e, gpu/conformance) and run with kina-run on the GPU,
#      compared with the CPU's tolerances (run_conformance.py --prebuilt);
#      prints the pass/fail counts.
#   9. The differential tests' random programs compiled for cuda
#      (gpu/difftest, difftest.py --prebuilt): each run with kina-run and
#      compared with its NumPy reference; a failure is printed with its
#      seed, program, inputs, expected and got results, and the command that
#      reproduces and reduces it on the development machine.
#      --difftest-seeds A:B runs only those of the built seeds;
#      --difftest-only runs this step alone (DIR then needs only bin/kina-run
#      and gpu/).
#  10. bench/gpu's programs (gpu/bench, built by bench/gpu/build.sh) run
#      with `bench.py --check-only`: each kinac result against PyTorch's
#      float64 reference (SKIP without a CUDA PyTorch).
#  11. The kina package on PyTorch CUDA tensors (gpu/python: test_cuda.py,
#      test_compile.py on ops_cuda.so): the caller's stream and device,
#      views, results against eager, 10^4 calls without a leak, no device
#      synchronisation, torch.compile with the custom op. Needs python3 with
#      PyTorch (CUDA) and NumPy (SKIP without them); cffi comes from
#      gpu/python/wheels when the Python lacks it. --python-only runs this
#      step alone (DIR then needs only gpu/python).
#  12. --multi (issue 17, alone; DIR needs only gpu/python): the device
#      checks of gpu/python/multi_gpu_check.py on ops_cuda.so, each in a
#      fresh process: kina_<fn> after runtime_gpu_set_device and with
#      $KINA_DEVICE (buffers on that device by cuPointerGetAttribute, device
#      0's primary context never activated, then device 0 again), invalid
#      ordinals and $KINA_DEVICE values -> the documented statuses, the
#      caller's context restored (its own, none, another device's), PyTorch
#      tensors on cuda:1 with cuda:0 current on a non-default stream, two
#      threads on two devices. With fewer than 2 GPUs it runs the one-device
#      variants (device 0 chosen explicitly, invalid ordinals, context
#      restore, two threads on device 0) and prints SKIP with the reason for
#      the two-device ones; exit 0 only if everything it ran passed.
# Steps 4-10 need the artefacts of scripts/gpu-artefacts.sh: missing ones are
# FAIL (they are the point of this script on a GPU machine). Then prints a
# summary. Exit status: 0 when every step passed (or the machine has no GPU:
# then everything is skipped with a message and the status is 0), 1 when any
# step failed, 2 when DIR lacks the binaries of steps 1-3 (build with
# scripts/build.sh and run `ctest -R runtime.linking` first, which links
# cpu_app, or use scripts/gpu-artefacts.sh).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
difftest_seeds=""
difftest_only=0
python_only=0
multi=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --difftest-seeds) difftest_seeds="${2:?--difftest-seeds needs A:B}"; shift 2 ;;
    --difftest-seeds=*) difftest_seeds="${1#--difftest-seeds=}"; shift ;;
    --difftest-only) difftest_only=1; shift ;;
    --python-only) python_only=1; shift ;;
    --multi) multi=1; shift ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ "${1:-}" == *.tar.xz && -f "$1" ]]; then
  # gpu-artefacts.sh's archive: unpacked into a temporary folder.
  unpacked="$(mktemp -d)"
  trap 'rm -rf "$unpacked"' EXIT
  tar -C "$unpacked" -xJf "$1" || {
    echo "gpu-check: cannot unpack $1" >&2
    exit 2
  }
  set -- "$unpacked"
fi
build="$(cd "${1:-$root/build}" 2>/dev/null && pwd)" || {
  echo "gpu-check: no build directory ${1:-$root/build}" >&2
  exit 2
}

runtime_tests="$build/bin/runtime_tests"
entry_stress="$build/bin/entry_stress"
cpu_app="$build/tests/runtime/linking/cpu_app"
missing=()
for f in "$runtime_tests" "$entry_stress" "$cpu_app"; do
  ((difftest_only || python_only || multi)) || [[ -x "$f" ]] || missing+=("$f")
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
# $KINA_GPU_CHECK_LOGS keeps every step's full log there; else a temporary
# folder, removed at the end.
if [[ -n "${KINA_GPU_CHECK_LOGS:-}" ]]; then
  log_dir="$KINA_GPU_CHECK_LOGS"
  mkdir -p "$log_dir"
else
  log_dir="$(mktemp -d)"
  trap 'rm -rf "$log_dir" ${unpacked:+"$unpacked"}' EXIT
fi
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

gpu="$build/gpu"
kina_run="$build/bin/kina-run"
have_python=0
python3 -c 'import numpy' >/dev/null 2>&1 && have_python=1

difftest_step() { # 9. the differential tests' programs on the GPU
  local name="differential tests on the GPU" log="$log_dir/difftest.log"
  if [[ ! -f "$gpu/difftest/index.json" || ! -x "$kina_run" ]]; then
    record "$name" FAIL "missing $gpu/difftest/index.json or $kina_run (scripts/gpu-artefacts.sh with a kinac that has --target=cuda)"
  elif ((!have_python)); then
    record "$name" FAIL "no python3 with numpy here"
  elif run_step "$name" "$log" python3 "$gpu/tools/difftest.py" \
    --prebuilt "$gpu/difftest" --kina-run "$kina_run" \
    --workdir "$log_dir/work-difftest" -j "$(nproc)" \
    ${difftest_seeds:+--seeds "$difftest_seeds"}; then
    record "$name" PASS "$(tail -1 "$log")"
  else
    record "$name" FAIL "$(tail -1 "$log"); first failures: $(grep -m3 '^FAIL' "$log" | cut -c1-160 | tr '\n' ' ') (whole report: $log, with KINA_GPU_CHECK_LOGS)"
  fi
}

summary() { # prints the summary; exits 1 if any step failed, else 0
  echo
  echo "gpu-check summary ($gpus GPU(s), driver $driver):"
  local failed=0 i
  for i in "${!names[@]}"; do
    printf '  %-40s %s\n' "${names[$i]}" "${results[$i]}"
    [[ "${results[$i]}" == FAIL* ]] && failed=$((failed + 1))
  done
  if ((failed)); then
    echo "gpu-check: $failed step(s) FAILED"
    exit 1
  fi
  echo "gpu-check: all steps passed"
  exit 0
}

# Prints PYTHONPATH for gpu/python's scripts: the folder, a site folder with
# this Python's cffi unpacked from gpu/python/wheels when it lacks cffi, then
# the caller's PYTHONPATH.
python_path() {
  local dir="$gpu/python" site="$log_dir/python-site"
  mkdir -p "$site"
  if ! python3 -c 'import cffi' >/dev/null 2>&1; then
    # Unpack this Python's cffi wheel and a pycparser (wheels are zips).
    python3 - "$dir/wheels" "$site" >&2 <<'PY'
import glob, os, sys, zipfile
wheels, site = sys.argv[1], sys.argv[2]
tag = "cp%d%d" % sys.version_info[:2]
picked = [w for w in glob.glob(os.path.join(wheels, "cffi-*.whl")) if f"-{tag}-" in w]
picked += sorted(glob.glob(os.path.join(wheels, "pycparser-*.whl")))[-1:]
for w in picked:
    zipfile.ZipFile(w).extractall(site)
print("gpu-check: unpacked", ", ".join(map(os.path.basename, picked)) or "nothing")
PY
  fi
  # The caller's PYTHONPATH stays (it may be where cffi came from).
  echo "$dir:$site${PYTHONPATH:+:$PYTHONPATH}"
}

python_step() { # 11. the kina package on PyTorch CUDA tensors
  local name="kina package on CUDA tensors" log="$log_dir/python.log"
  local dir="$gpu/python"
  if [[ ! -f "$dir/ops_cuda.so" ]]; then
    record "$name" FAIL "missing $dir/ops_cuda.so (scripts/gpu-artefacts.sh)"
    return
  fi
  if ! python3 -c 'import numpy, torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    record "$name" SKIP "no python3 with NumPy and a CUDA PyTorch here"
    return
  fi
  if run_step "$name" "$log" env PYTHONPATH="$(python_path)" \
    KINA_TEST_CUDA_LIBRARY="$dir/ops_cuda.so" \
    sh -c 'python3 "$0/test_cuda.py" && python3 "$0/test_compile.py"' "$dir"; then
    record "$name" PASS "$(grep -c '^PASS' "$log") passed, $(grep -c '^SKIP' "$log") skipped: $(grep '^SKIP' "$log" | cut -c1-120 | tr '\n' ' ')"
  else
    record "$name" FAIL "$(grep -m4 '^FAIL' "$log" | cut -c1-300 | tr '\n' ' ')"
  fi
}

multi_step() { # 12. the issue-17 device checks
  local name="devices (issue 17)" log="$log_dir/multi.log"
  local dir="$gpu/python"
  if [[ ! -f "$dir/ops_cuda.so" || ! -f "$dir/multi_gpu_check.py" ]]; then
    record "$name" FAIL "missing $dir/ops_cuda.so or multi_gpu_check.py (scripts/gpu-artefacts.sh)"
    return
  fi
  run_step "$name" "$log" env PYTHONPATH="$(python_path)" \
    python3 "$dir/multi_gpu_check.py" "$dir/ops_cuda.so"
  local status=$?
  cat "$log" | grep -E '^(PASS|FAIL|SKIP)' | sed 's/^/gpu-check:   /'
  local summary
  summary="$(grep -c '^PASS' "$log") passed, $(grep -c '^SKIP' "$log") skipped ($(grep '^SKIP' "$log" | cut -d: -f1 | cut -c6- | tr '\n' ' '))"
  if ((status == 0)) && ! grep -q '^FAIL' "$log"; then
    record "$name" PASS "$summary"
  else
    record "$name" FAIL "$(grep -m4 '^FAIL' "$log" | cut -c1-300 | tr '\n' ' ')$(tail -1 "$log")"
  fi
}

if ((difftest_only)); then
  difftest_step
  summary
fi
if ((python_only)); then
  python_step
  summary
fi
if ((multi)); then
  multi_step
  summary
fi

# 1. The GPU suites of runtime_tests: none may skip here. The two long tests
# run once each, as steps of their own.
long_tests='GpuLaunch.EightThreadsLaunchConcurrently:GpuLaunch.TenThousandCallsLeakNothing'
step=$((step + 1))
log="$log_dir/gpu.log"
if run_step "runtime_tests GPU suites" "$log" "$runtime_tests" \
  --gtest_filter="GpuAlloc*:GpuLaunch*:GpuNoDriver*:GpuDriverEnv*:CudaDriver*-$long_tests"; then
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

gtest_step() { # gtest_step NAME FILTER [GREP]: one test alone, must pass
  local log="$log_dir/$2.log"
  if run_step "$1" "$log" "$runtime_tests" --gtest_filter="$2" &&
    ! grep -q '^\[  SKIPPED \]' "$log" && grep -q '^\[  PASSED  \] 1 test' "$log"; then
    record "$1" PASS "${3:+$(grep -m1 "$3" "$log")}"
  else
    record "$1" FAIL "$(grep -E '^\[  (FAILED|SKIPPED) \]|Failure' "$log" | head -3 | tr '\n' ' ')"
  fi
}
gtest_step "8 threads launching concurrently" GpuLaunch.EightThreadsLaunchConcurrently
gtest_step "leak check (10^4 calls)" GpuLaunch.TenThousandCallsLeakNothing 'leak check:'

step=$((step + 1))
log="$log_dir/all.log"
if run_step "runtime_tests (all)" "$log" "$runtime_tests" --gtest_filter="-$long_tests"; then
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

# 4.-9. The artefacts of scripts/gpu-artefacts.sh.
mlir_gpu_test="$build/bin/mlir_gpu_test"
log="$log_dir/mlir_gpu.log"
if [[ ! -x "$mlir_gpu_test" ]]; then
  record "mlir_gpu_test (MLIR-lowered kernels)" FAIL "missing $mlir_gpu_test"
elif KINA_REQUIRE_GPU=1 run_step "mlir_gpu_test" "$log" "$mlir_gpu_test" &&
  grep -qx 'mlir-gpu: ok' "$log"; then
  record "mlir_gpu_test (MLIR-lowered kernels)" PASS
else
  record "mlir_gpu_test (MLIR-lowered kernels)" FAIL "$(tail -3 "$log" | tr '\n' ' ')"
fi

log="$log_dir/kina_run_cuda.log"
if [[ ! -f "$gpu/axpy_cuda.so" || ! -x "$kina_run" ]]; then
  record "kina-run on a cuda library" FAIL "missing $gpu/axpy_cuda.so or $kina_run (run scripts/gpu-artefacts.sh)"
elif ((!have_python)); then
  record "kina-run on a cuda library" FAIL "no python3 with numpy here"
elif run_step "kina-run on a cuda library" "$log" python3 \
  "$gpu/tools/check_kina_run_cuda.py" --kina-run "$kina_run" \
  --library "$gpu/axpy_cuda.so" --workdir "$log_dir/kina-run" --require-gpu; then
  record "kina-run on a cuda library" PASS "$(tail -1 "$log")"
else
  record "kina-run on a cuda library" FAIL "$(tail -2 "$log" | tr '\n' ' ')"
fi

# The measuring half of cuda autotuning: kina-run --tune-plan on the plan
# gpu-artefacts.sh built (docs/autotune.md); skipped without a CUDA GPU.
log="$log_dir/tune.log"
name="cuda autotuning: kina-run --tune-plan"
if [[ ! -f "$gpu/tune/plan.json" || ! -x "$kina_run" ]]; then
  record "$name" FAIL "missing $gpu/tune/plan.json or $kina_run (run scripts/gpu-artefacts.sh)"
elif ! "$kina_run" --gpu-info >/dev/null 2>&1; then
  record "$name" SKIP "kina-run --gpu-info finds no CUDA GPU"
elif ((!have_python)); then
  record "$name" FAIL "no python3 here"
elif run_step "$name" "$log" python3 "$gpu/tools/check_autotune_cuda.py" \
  --kina-run "$kina_run" --measure-plan "$gpu/tune"; then
  record "$name" PASS "$(tail -1 "$log")"
else
  record "$name" FAIL "$(grep -m3 '^FAIL' "$log" | cut -c1-160 | tr '\n' ' ')"
fi

log="$log_dir/digits.log"
if [[ ! -x "$gpu/digits/digits" ]]; then
  record "digits sample on the GPU" FAIL "missing $gpu/digits/digits (scripts/gpu-artefacts.sh with a kinac that has --target=cuda)"
elif run_step "digits sample on the GPU" "$log" "$gpu/digits/digits" "$gpu/digits/data" &&
  grep -q '^digits: ' "$log"; then
  record "digits sample on the GPU" PASS "$(grep -m1 '^digits: ' "$log")"
else
  record "digits sample on the GPU" FAIL "$(tail -2 "$log" | tr '\n' ' ')"
fi

suite_step() { # suite_step NAME DIR: run_conformance.py --prebuilt DIR
  local name="$1" dir="$2" log="$log_dir/$(basename "$2").log"
  if [[ ! -f "$dir/index.json" ]]; then
    record "$name" FAIL "missing $dir/index.json (scripts/gpu-artefacts.sh with a kinac that has --target=cuda)"
  elif ((!have_python)); then
    record "$name" FAIL "no python3 with numpy here"
  elif run_step "$name" "$log" python3 "$gpu/tools/run_conformance.py" \
    --prebuilt "$dir" --kina-run "$kina_run" --workdir "$log_dir/work-$(basename "$dir")" \
    -j "$(nproc)"; then
    record "$name" PASS "$(tail -1 "$log")"
  else
    record "$name" FAIL "$(tail -1 "$log"); first failures: $(grep -m3 '^FAIL' "$log" | cut -c1-160 | tr '\n' ' ')"
  fi
}
suite_step "end-to-end cases on the GPU" "$gpu/e2e"
suite_step "conformance suite on the GPU" "$gpu/conformance"

# 10. bench/gpu's programs (the cuBLASLt matmuls, the GPT-2 block, the MLP,
# the memory-bound rows) checked against PyTorch's float64 reference.
bench_step() {
  local name="bench/gpu results against PyTorch" log="$log_dir/bench.log"
  if [[ ! -f "$gpu/bench/kbench.so" ]]; then
    record "$name" FAIL "missing $gpu/bench (scripts/gpu-artefacts.sh)"
  elif ! python3 -c 'import torch; assert torch.cuda.is_available()' \
    >/dev/null 2>&1; then
    record "$name" SKIP "no python3 with CUDA PyTorch here"
  elif run_step "$name" "$log" python3 "$gpu/tools/bench.py" "$gpu/bench" \
    --check-only; then
    record "$name" PASS "$(tail -1 "$log")"
  else
    record "$name" FAIL "$(grep -m3 -E 'WRONG|FAILED' "$log" | cut -c1-160 | tr '\n' ' ')$(tail -1 "$log")"
  fi
}
bench_step

difftest_step
python_step

# --- Summary ----------------------------------------------------------------
summary
