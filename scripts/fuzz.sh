#!/usr/bin/env bash
# Fuzzes kinac with libFuzzer (docs/reliability.md): the front end (lexer,
# parser, semantic analysis, canonical printer) and the lowering to verified
# MLIR and through the pass pipeline. Installs clang-22 and its libFuzzer
# runtime when missing (KINA_WITH_FUZZ=1 scripts/install-deps.sh), builds the
# two targets with clang-22 and -fsanitize=fuzzer,address,undefined into
# build-fuzz/ (KINA_FUZZ_BUILD_DIR overrides), seeds each corpus with the
# .kir files of samples/ and tests/ and the regression inputs, and runs the
# targets side by side for SECONDS each (default 600) with the Kina IR
# dictionary. Crash, leak and timeout inputs are written to
# build-fuzz/findings/<target>/; the exit status is 1 if there are any (add
# each to tests/fuzz/regressions/ once fixed).
#
# Usage: scripts/fuzz.sh [SECONDS [TARGET...]]   TARGET: frontend, lowering
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(frontend lowering); fi
build="${KINA_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${KINA_BUILD_JOBS:-$(nproc)}"

KINA_WITH_FUZZ=1 "$root/scripts/install-deps.sh"
# Assertions stay on (no NDEBUG): a failed assert is a finding too.
cmake -S "$root" -B "$build" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DKINA_FUZZ=ON -DKINA_SANITIZE=address,undefined -DKINA_WERROR=OFF
cmake --build "$build" -j"$jobs" \
  $(for t in "${targets[@]}"; do echo "--target kina_fuzz_$t"; done)

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
pids=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings"
  # Seeds: every committed .kir file and the regression inputs.
  find "$root/samples" "$root/tests" -name '*.kir' -type f \
    -exec cp -f {} "$corpus/" \;
  cp -f "$root/tests/fuzz/regressions/"* "$corpus/" 2>/dev/null || true
  echo "fuzz.sh: $t for ${seconds}s, corpus $corpus, findings $findings"
  "$build/bin/kina_fuzz_$t" "$corpus" \
    -dict="$root/tests/fuzz/kina.dict" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$findings/" > "$build/fuzz-$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t="${targets[$i]}"
  if wait "${pids[$i]}"; then rc=0; else rc=$?; fi
  found=$(find "$build/findings/$t" -type f | wc -l)
  echo "fuzz.sh: $t exited $rc after $(grep -c . "$build/fuzz-$t.log") log" \
    "lines; $found finding(s); log $build/fuzz-$t.log"
  grep -E "^(stat::|Done|INFO: Running|==[0-9]+==ERROR)" "$build/fuzz-$t.log" \
    | tail -8 || true
  if [ "$rc" != 0 ] || [ "$found" != 0 ]; then status=1; fi
done
exit $status
