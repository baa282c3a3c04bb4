#!/usr/bin/env bash
# Installs what kinac needs to build and test, from Debian 12's packages, and
# nothing when everything is already there (idempotent). Used by demo.sh,
# test.sh and the Dockerfile. docs/dependencies.md says why each is needed.
set -euo pipefail

packages=(
  # build
  cmake make gcc g++ pkg-config
  # compiler dependencies
  mlir-22-tools libmlir-22-dev llvm-22-dev llvm-22-tools
  libcli11-dev nlohmann-json3-dev
  # tests (valgrind: memcheck over the runtime and compiled entry points)
  googletest libgtest-dev python3-numpy valgrind
  # the Python package kina (python/) and its tests: cffi, pytest, CPU PyTorch
  python3-cffi python3-pytest python3-torch
)
# Regenerating the digits sample data (not needed to run it).
if [ "${KINA_WITH_SKLEARN:-0}" = 1 ]; then packages+=(python3-sklearn); fi
# Fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizer runtimes.
if [ "${KINA_WITH_FUZZ:-0}" = 1 ]; then packages+=(clang-22 libclang-rt-22-dev); fi
# Benchmarks (bench/matmul.py): OpenBLAS, the peer of the matrix product.
if [ "${KINA_WITH_BENCH:-0}" = 1 ]; then packages+=(libopenblas-dev); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
