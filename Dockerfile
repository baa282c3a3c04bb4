# kinac on Debian 12, in two stages (docs/integration.md, "Docker"):
#
#   builder  every build dependency (scripts/install-deps.sh, as CI), the
#            Release build of kinac and libkina_runtime.a (scripts/build.sh)
#            and `cmake --install` into /opt/kina/install; with
#            --build-arg RUN_TESTS=1 the whole ctest suite runs first
#            (scripts/test.sh), and a failing test fails the build.
#   final    only what compiling and linking a model needs: kinac (and
#            kina-run) in /usr/local/bin, the runtime in /usr/local/lib,
#            the headers in /usr/local/include/kina, the CMake and
#            pkg-config packages in /usr/local/lib/{cmake/Kina,pkgconfig};
#            LLVM 22's mlir-translate and llc in /usr/lib/llvm-22/bin (where
#            kinac was configured to find them) with the LLVM and MLIR
#            shared libraries they and kinac load, and gcc with the C and
#            C++ libraries for linking (`kinac m.kir main.c -o app`,
#            --emit=shared, `cc ... $(kinac --print-link-flags)`).
#
#   docker build -t kinac .                       # add --build-arg RUN_TESTS=1
#   docker run --rm kinac                         # digits: N=1797 accuracy=...
#   docker run --rm -v "$PWD:/w" -w /w kinac kinac model.kir -o model.o
#
# scripts/docker-check.sh builds this with podman and checks the image.
#
# Base image: plain debian:12 by default; the CPU target needs nothing
# else. For the runtime's CUDA path, pass a Debian 12 image from your
# registry that carries the CUDA Toolkit under /usr/local/cuda (for example
# debian:12 with `cuda-toolkit` from NVIDIA's debian12 apt repository):
#   docker build --build-arg BASE_IMAGE=<registry>/debian12-cuda-devel .
# We do not default to NVIDIA's public nvidia/cuda images because they are
# built on other distributions than Debian 12, and CI runs on Debian 12.
# CMake finds the toolkit; without it the runtime builds its no-CUDA path
# (GPU allocation returns status 4). LLVM/MLIR 22 come from Debian's
# packages, as in CI. (With a CUDA build, the final stage uses the same
# base image, so the CUDA libraries the runtime links stay available.)
ARG BASE_IMAGE=debian:12

# --- builder -----------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder
# RUN_TESTS=1: run the whole suite (scripts/test.sh) before installing.
ARG RUN_TESTS=0
# Parallel build jobs (empty: the number of cores).
ARG KINA_BUILD_JOBS=

# The dependencies first, in their own layer: editing a source file does not
# download them again.
COPY scripts/install-deps.sh /opt/kina/src/scripts/install-deps.sh
RUN /opt/kina/src/scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*

COPY . /opt/kina/src
WORKDIR /opt/kina/src
# The exact versions of the two LLVM/MLIR library packages the build linked
# against go to the final stage, which installs those and no others (its
# mlir-translate and llc come from this stage).
RUN set -eu; \
    export KINA_BUILD_JOBS="${KINA_BUILD_JOBS:-$(nproc)}"; \
    if [ "$RUN_TESTS" = 1 ]; then \
      scripts/test.sh; \
    else \
      scripts/build.sh -DBUILD_TESTING=OFF; \
    fi; \
    cmake --install build --prefix /opt/kina/install; \
    dpkg-query -W -f='${Package}=${Version}\n' libllvm22 libmlir-22 \
      > /opt/kina/llvm-packages.txt; \
    rm -rf build

# --- final -------------------------------------------------------------------
FROM ${BASE_IMAGE}
# Run-time packages: LLVM's and MLIR's shared libraries at the builder's
# versions, and a C compiler driver with the C and C++ libraries that
# `kinac --print-link-flags` names (-lstdc++ -lm).
COPY --from=builder /opt/kina/llvm-packages.txt /tmp/llvm-packages.txt
RUN set -eu; \
    apt-get update -qq; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/llvm-packages.txt) gcc libc6-dev libstdc++-12-dev; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /tmp/llvm-packages.txt
# The three LLVM tools kinac runs (mlir-translate, opt at -O1 and above,
# llc), from the builder's mlir-22-tools and llvm-22 packages (the rest of
# those packages is not needed).
COPY --from=builder /usr/lib/llvm-22/bin/mlir-translate /usr/lib/llvm-22/bin/opt \
     /usr/lib/llvm-22/bin/llc /usr/lib/llvm-22/bin/
# kinac, kina-run, the runtime archive, headers and packages.
COPY --from=builder /opt/kina/install/ /usr/local/
# The default command's sample: the digits MLP, its C main and data.
COPY --from=builder /opt/kina/src/scripts/digits.sh /opt/kina/scripts/digits.sh
COPY --from=builder /opt/kina/src/samples/digits/ /opt/kina/samples/digits/
# Fail the build here, not at the first use, if a shared library is missing.
RUN kinac --version \
 && /usr/lib/llvm-22/bin/mlir-translate --version >/dev/null \
 && /usr/lib/llvm-22/bin/opt --version >/dev/null \
 && /usr/lib/llvm-22/bin/llc --version >/dev/null \
 && kinac --print-link-flags
WORKDIR /opt/kina
CMD ["scripts/digits.sh"]
