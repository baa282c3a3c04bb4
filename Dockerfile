# kinac on Debian 12: dependencies, build and tests by the same scripts CI
# runs (scripts/install-deps.sh, scripts/test.sh), then the install tree in
# /usr/local. The default command compiles the digits sample with the
# installed kinac and runs it (scripts/digits.sh).
#
#   docker build -t kinac .
#   docker run --rm kinac                      # digits: N=1797 accuracy=...
#   docker run --rm -v "$PWD:/w" -w /w kinac kinac model.kir -o model.o
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
# packages, as in CI.
ARG BASE_IMAGE=debian:12
FROM ${BASE_IMAGE}

COPY . /opt/kina/src
WORKDIR /opt/kina/src
# What CI runs (install-deps, configure, build, ctest), then the install.
RUN scripts/test.sh \
 && cmake --install build --prefix /usr/local \
 && rm -rf build
CMD ["scripts/digits.sh"]
