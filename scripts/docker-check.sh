#!/usr/bin/env bash
# Builds the Dockerfile's image with podman and checks it: the image size,
# its default command (the digits sample), a model compiled and run from a
# read-only mounted folder (samples/digits), a small model and C main from a
# temporary folder linked by kinac's link mode, and a bad model that must
# give a located error, exit 1 and no output file; the image must hold no
# build dependency and stay under a size limit. Prints every command it
# runs and what the container printed; exits nonzero on the first failure.
# Takes minutes (a Release build of kinac inside the builder stage); not
# part of CI or ctest. docs/integration.md ("Docker") describes it.
#
#   scripts/docker-check.sh               build, then check
#   scripts/docker-check.sh --run-tests   build with RUN_TESTS=1 (the whole
#                                         ctest suite runs in the builder)
#   scripts/docker-check.sh --no-build    check the image built before
#
# Environment:
#   KINA_DOCKER_BASE     base image (default localhost/debian:12; when it is
#                        missing, made here with debootstrap from the Debian
#                        mirror this machine's apt uses)
#   KINA_DOCKER_IMAGE    the image built and checked (default localhost/kinac:check)
#   KINA_OCI_RUNTIME     podman's OCI runtime (default /usr/sbin/runc: crun,
#                        podman's default, fails on hosts with hybrid cgroups)
#   KINA_BUILD_JOBS      parallel build jobs in the builder (default: its cores)
#   KINA_DOCKER_MAX_MB   the largest image size that passes (default 900)
#   KINA_DOCKER_RUN_ARGS podman run flags of the checks (default: resource
#                        limits runc can set without CAP_SYS_RESOURCE)
#
# Runs as root (podman, debootstrap). Installs podman, runc and debootstrap
# from Debian's packages when they are missing (nothing when present); they
# are not CI dependencies.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="${KINA_DOCKER_BASE:-localhost/debian:12}"
image="${KINA_DOCKER_IMAGE:-localhost/kinac:check}"
oci="${KINA_OCI_RUNTIME:-/usr/sbin/runc}"
run_tests=0
build=1
for arg in "$@"; do
  case "$arg" in
  --run-tests) run_tests=1 ;;
  --no-build) build=0 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "docker-check: error: unknown argument '$arg' (see --help)" >&2
    exit 2
    ;;
  esac
done

fail() {
  echo "docker-check: FAILED: $*" >&2
  exit 1
}
show() { echo "+ $*"; }
podman_() { podman --runtime "$oci" "$@"; }

# --- The tools (idempotent) ----------------------------------------------------
packages=(podman runc debootstrap)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "docker-check: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ -x "$oci" ] || fail "OCI runtime '$oci' is not executable (set KINA_OCI_RUNTIME)"

work="$(mktemp -d /var/tmp/kina-docker-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# --- The base image --------------------------------------------------------------
# A minimal Debian 12 made by debootstrap, with the bookworm, bookworm-updates
# and bookworm-security suites of the host's apt sources (LLVM 22 comes from
# bookworm-security).
if [ "$build" = 1 ] && ! podman image exists "$base"; then
  [ "$base" = localhost/debian:12 ] ||
    fail "base image '$base' not found (pull it, or leave KINA_DOCKER_BASE unset)"
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || fail "$sources not found: no Debian mirror to bootstrap from"
  mirror="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' "$sources")"
  [ -n "$mirror" ] || fail "no URIs line in $sources"
  echo "docker-check: making $base with debootstrap from $mirror"
  rootfs="$work/rootfs"
  show debootstrap --variant=minbase bookworm "$rootfs" "$mirror"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
  rm -f "$rootfs/etc/apt/sources.list"
  cp "$sources" "$rootfs/etc/apt/sources.list.d/debian.sources"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  show "tar -C $rootfs -c . | podman import - $base"
  tar -C "$rootfs" -c . | podman import - "$base" >/dev/null
  rm -rf "$rootfs"
fi

# --- The build ---------------------------------------------------------------------
if [ "$build" = 1 ]; then
  args=(build --network host --build-arg BASE_IMAGE="$base"
    --build-arg RUN_TESTS="$run_tests" -t "$image")
  if [ -n "${KINA_BUILD_JOBS:-}" ]; then
    args+=(--build-arg KINA_BUILD_JOBS="$KINA_BUILD_JOBS")
  fi
  show podman --runtime "$oci" "${args[@]}" "$root"
  start=$(date +%s)
  podman_ "${args[@]}" "$root" || fail "podman build"
  echo "docker-check: built $image in $(($(date +%s) - start)) s"
fi
podman image exists "$image" || fail "image '$image' not found (build it first)"
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "docker-check: image $image: $size bytes ($((size / 1000000)) MB)"
# The final stage holds no build dependencies (the single-stage image, which
# kept them, was 2.89 GB).
max_mb="${KINA_DOCKER_MAX_MB:-900}"
[ $((size / 1000000)) -le "$max_mb" ] ||
  fail "image is $((size / 1000000)) MB, more than $max_mb MB (KINA_DOCKER_MAX_MB)"

# Resource limits of the containers: podman gives a root container 1048576
# open files and processes, which runc cannot set where podman lacks
# CAP_SYS_RESOURCE ("error setting rlimit type 7: operation not
# permitted"), so the checks ask for the host's own open-file limit and a
# process limit below it (on such a host even the host's own process limit
# was refused). KINA_DOCKER_RUN_ARGS replaces these flags.
read -r -a run_args <<<"${KINA_DOCKER_RUN_ARGS:---ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=32768:32768}"

# Runs the image with no network, printing the command and its output;
# sets $out (stdout and stderr) and $rc.
container() {
  show podman run --rm --network none "${run_args[@]}" "$@"
  set +e
  out="$(podman_ run --rm --network none "${run_args[@]}" "$@" 2>&1)"
  rc=$?
  set -e
  printf '%s\n' "$out" | sed 's/^/  | /'
  echo "  (exit $rc)"
}

# --- 1. The default command: the digits sample inside the image -------------------
echo "docker-check: 1. default command"
container "$image"
[ "$rc" = 0 ] || fail "default command exited $rc"
last="$(printf '%s\n' "$out" | tail -1)"
[[ "$last" =~ ^digits:\ N=1797\ accuracy= ]] || fail "default command: last line '$last'"

# --- 2. A model from a read-only mounted folder: samples/digits -------------------
echo "docker-check: 2. samples/digits mounted read-only at /work"
container -v "$root/samples/digits:/work:ro" -w /work "$image" sh -ec '
  set -x
  kinac mlp.kir -O2 -o /tmp/mlp.o
  kinac mlp.kir --emit=header -o /tmp/mlp.h
  cc -std=c99 -O2 -I/tmp main.c /tmp/mlp.o $(kinac --print-link-flags) -o /tmp/digits
  /tmp/digits data'
[ "$rc" = 0 ] || fail "mounted digits sample exited $rc"
last="$(printf '%s\n' "$out" | tail -1)"
[[ "$last" =~ ^digits:\ N=1797\ accuracy= ]] || fail "mounted digits sample: last line '$last'"

# --- 3. A small model and C main, linked by kinac, output to a mounted folder -----
echo "docker-check: 3. kinac link mode: scale.kir + main.c from a temporary folder"
model="$work/model"
outdir="$work/out"
mkdir -p "$model" "$outdir"
cat >"$model/scale.kir" <<'EOF'
# Row-wise weighted sums: y[i] = sum_j x[i, j] * w[j].
module @scale

func @forward(%x: f32[N, 3], %w: f32[3]) -> f32[N] {
  %p = mul %x, %w
  %y = reduce_sum %p {axes = [1], keepdims = false}
  return %y
}
EOF
cat >"$model/main.c" <<'EOF'
/* Calls scale.kir's @forward on two rows and prints the results. */
#include "scale.h"

#include <stdio.h>

int main(void) {
  float x[2][3] = {{1, 2, 3}, {-1, 0.5f, 4}};
  float w[3] = {0.5f, 2, -1};
  KinaMemRef2 in = {x, x, 0, {2, 3}, {3, 1}};
  KinaMemRef1 win = {w, w, 0, {3}, {1}};
  KinaMemRef1 y;
  int32_t status = kina_forward(&y, &in, &win);
  if (status != 0) {
    fprintf(stderr, "kina_forward: %s: %s\n", kina_status_name(status),
            kina_last_error());
    return 1;
  }
  const float *v = (const float *)y.aligned;
  printf("scale: %lld values: %g %g\n", (long long)y.sizes[0], v[0], v[1]);
  runtime_free(y.allocated);
  return 0;
}
EOF
container -v "$model:/work:ro" -v "$outdir:/out" -w /work "$image" sh -ec '
  set -x
  kinac scale.kir main.c -o /out/scale
  /out/scale'
[ "$rc" = 0 ] || fail "link mode exited $rc"
# 1*0.5 + 2*2 + 3*-1 = 1.5; -1*0.5 + 0.5*2 + 4*-1 = -3.5
[ "$(printf '%s\n' "$out" | tail -1)" = "scale: 2 values: 1.5 -3.5" ] ||
  fail "link mode: expected 'scale: 2 values: 1.5 -3.5'"
[ -x "$outdir/scale" ] || fail "link mode: /out/scale not on the host"

# --- 4. A bad model: located error, exit 1, no output file --------------------------
echo "docker-check: 4. a bad model"
cat >"$model/bad.kir" <<'EOF'
func @forward(%x: f32[N, 3], %w: f32[4]) -> f32[N, 3] {
  %y = add %x, %w
  return %y
}
EOF
container -v "$model:/work:ro" -v "$outdir:/out" -w /work "$image" \
  kinac bad.kir -o /out/bad.o
[ "$rc" = 1 ] || fail "bad model: exit $rc, expected 1"
printf '%s\n' "$out" | grep -q '^bad.kir:2:[0-9]*: error: ' ||
  fail "bad model: no 'bad.kir:2:COL: error:' line"
[ ! -e "$outdir/bad.o" ] || fail "bad model: /out/bad.o was written"

# --- 5. Nothing of the build in the final image -------------------------------------
echo "docker-check: 5. no build dependencies in the image"
container "$image" sh -c '
  for t in cmake make c++ g++ FileCheck mlir-opt valgrind python3; do
    if command -v "$t"; then echo "build tool $t is in the image"; exit 1; fi
  done
  for d in /usr/lib/llvm-22/include /usr/include/gtest /opt/kina/src; do
    if [ -e "$d" ]; then echo "$d is in the image"; exit 1; fi
  done
  ls /usr/local/bin /usr/local/lib /usr/local/lib/cmake/Kina /usr/local/include/kina'
[ "$rc" = 0 ] || fail "build dependencies in the image"

echo "docker-check: OK: $image ($((size / 1000000)) MB): default command, mounted digits, link mode, bad input, no build dependencies"
