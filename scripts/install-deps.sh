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

# PyTorch >= 2 from PyPI for the torch.compile test (tests/python/
# test_compile.py), when KINA_WITH_TORCH2=1 (scripts/test.sh sets it unless
# told KINA_WITH_TORCH2=0): PyPI's only Linux x86-64 wheel is the CUDA one,
# which pulls about 3.3 GB of nvidia-* wheels (5.3 GB installed, about 6.5
# minutes here; docs/python.md, "torch.compile"). KINA_WITH_TORCH2=1 installs
# it into a virtual environment over the system's packages,
# $KINA_TORCH2_VENV (default ~/.cache/kina/torch2), which scripts/test.sh
# then passes to CMake as KINA_TORCH2_PYTHON.
if [ "${KINA_WITH_TORCH2:-0}" = 1 ]; then packages+=(python3-venv); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${KINA_WITH_TORCH2:-0}" = 1 ]; then
  venv="${KINA_TORCH2_VENV:-$HOME/.cache/kina/torch2}"
  if "$venv/bin/python" -c 'import torch, sys; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then
    echo "install-deps: PyTorch >= 2 present in $venv"
  else
    echo "install-deps: installing PyTorch >= 2 from PyPI into $venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install --quiet --no-cache-dir "torch>=2"
  fi
fi
