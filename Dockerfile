# kinac on Debian 12, built and tested by the same scripts CI runs.
#
# Base image: plain debian:12 by default (the CPU target needs nothing else).
# For the runtime's CUDA allocation path, pass a Debian 12 image that carries
# the CUDA Toolkit under /usr/local/cuda from your registry, e.g.
#   docker build --build-arg BASE_IMAGE=<registry>/cuda-devel-debian12 .
# CMake finds the toolkit there; without it the runtime builds its no-CUDA
# path (GPU allocation returns status 4).
ARG BASE_IMAGE=debian:12
FROM ${BASE_IMAGE}

COPY . /opt/kina/src
WORKDIR /opt/kina/src
# Same install script, build and tests as scripts/test.sh.
RUN scripts/test.sh
ENV PATH="/opt/kina/src/build/bin:${PATH}"
# Default: compile the digits MLP with kinac and run it.
CMD ["scripts/demo.sh"]
