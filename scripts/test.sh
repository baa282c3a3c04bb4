#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every ctest suite
# (GoogleTest unit and runtime tests, the runtime's stress and fault tests
# against its ASan+UBSan and TSan copies and under valgrind, FileCheck golden
# tests, end-to-end and bad-input tests, fuzz regression replays, the digits
# sample).
#
#   scripts/test.sh             into build/ ($KINA_BUILD_DIR)
#   scripts/test.sh --sanitize  everything (compiler, runtime, tests) built
#                               with AddressSanitizer + UndefinedBehaviorSanitizer
#                               into build-sanitize/, the whole suite run
#                               under them (docs/reliability.md)
# Further arguments go to ctest (e.g. -L runtime, -R diagnostics).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
configure=()
build="${KINA_BUILD_DIR:-$root/build}"
if [ "${1:-}" = "--sanitize" ]; then
  shift
  build="${KINA_BUILD_DIR:-$root/build-sanitize}"
  configure=(-DKINA_SANITIZE=address,undefined)
  # Refused huge allocations are a tested status 2, not an ASan abort; LSan
  # checks every test program at exit.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
fi
# PyTorch >= 2 from PyPI, in a virtual environment, for the torch.compile
# test (ctest python.torch_compile; issue 15 asks for it in CI): installed
# by default here, about 3.3 GB downloaded once (docs/python.md,
# "torch.compile"); KINA_WITH_TORCH2=0 scripts/test.sh leaves it out.
export KINA_WITH_TORCH2="${KINA_WITH_TORCH2:-1}"
"$root/scripts/install-deps.sh"
torch2="${KINA_TORCH2_VENV:-$HOME/.cache/kina/torch2}/bin/python"
if [ -x "$torch2" ]; then configure+=(-DKINA_TORCH2_PYTHON="$torch2"); fi
# Everything: the tests need the sanitizer and fuzz builds too.
KINA_BUILD_DIR="$build" KINA_BUILD_TARGETS= "$root/scripts/build.sh" "${configure[@]}"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
