"""Batched and broadcast-batch f32/f64 matmul (kina-matmul-kernel,
src/passes/MatmulKernel.cpp: the register-tiled kernel per batch, batches
and column slabs on the runtime's thread pool) against NumPy, at sizes
that cross the kernel's tiles (4-row tiles, 2-vector panels, the masked
last columns, the 256-row and 256-deep blocks) and its thread split, at
-O1, -O2 and the processor levels; the same bits at KINA_NUM_THREADS=1
and 2 (each in its own process: the runtime reads the variable once)."""

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

MODULE = """module @bmm
func @bmm(%a: {t}[B, M, K], %b: {t}[B, K, N]) -> {t}[B, M, N] {{
  %c = matmul %a, %b
  return %c
}}
func @bcast_b(%a: {t}[B, M, K], %b: {t}[K, N]) -> {t}[B, M, N] {{
  %c = matmul %a, %b
  return %c
}}
func @bcast_a(%a: {t}[M, K], %b: {t}[B, K, N]) -> {t}[B, M, N] {{
  %c = matmul %a, %b
  return %c
}}
func @bcast4(%a: {t}[P, 1, M, K], %b: {t}[Q, K, N]) -> {t}[P, Q, M, N] {{
  %c = matmul %a, %b
  return %c
}}
func @fixed(%a: {t}[3, 37, 300], %b: {t}[3, 300, 21]) -> {t}[3, 37, 21] {{
  %c = matmul %a, %b
  return %c
}}
"""

# (function, shape of a, shape of b): tile and block edges, one batch,
# empty K, enough work to split over threads. (An empty batch is left out:
# the kina package refuses the 0-sized output it allocates, stride 0.)
CASES = [
    ("bmm", (2, 5, 3), (2, 3, 7)),
    ("bmm", (3, 37, 300), (3, 300, 45)),
    ("bmm", (12, 130, 64), (12, 64, 257)),
    ("bmm", (1, 300, 70), (1, 70, 130)),
    ("bmm", (2, 4, 0), (2, 0, 9)),
    ("bcast_b", (5, 67, 33), (33, 90)),
    ("bcast_a", (67, 33), (5, 33, 90)),
    ("bcast4", (2, 1, 19, 40), (3, 40, 29)),
    ("fixed", (3, 37, 300), (3, 300, 21)),
]

RUNNER = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import kina
lib = kina.load(sys.argv[2])
data = np.load(sys.argv[3])
out = {}
for i in range(len(data.files) // 3):
    name = str(data["n%d" % i])
    out["r%d" % i] = getattr(lib, name)(data["a%d" % i], data["b%d" % i])
np.savez(sys.argv[4], **out)
"""


def run_cases(work, so, inputs, threads):
    runner = os.path.join(work, "runner.py")
    with open(runner, "w") as fh:
        fh.write(RUNNER)
    out = os.path.join(work, "out%s.npz" % threads)
    env = dict(os.environ, KINA_NUM_THREADS=str(threads))
    subprocess.run([sys.executable, runner,
                    os.path.join(HERE, "..", "..", "python"), so, inputs,
                    out], check=True, env=env)
    got = np.load(out)
    return [got["r%d" % i] for i in range(len(CASES))]


@pytest.mark.parametrize("flags", [["-O2"], ["-O1"], ["-O2", "--mcpu=x86-64"],
                                   ["-O2", "--mcpu=x86-64-v3"]],
                         ids=lambda f: "_".join(f))
@pytest.mark.parametrize("et", ["f32", "f64"])
def test_batched_matmul(tmp_path, flags, et):
    kinac = os.environ.get("KINAC")
    if not kinac:
        pytest.fail("set KINAC (ctest sets it)")
    dt = np.float32 if et == "f32" else np.float64
    src = tmp_path / "bmm.kir"
    src.write_text(MODULE.format(t=et))
    so = str(tmp_path / "bmm.so")
    subprocess.run([kinac, str(src), "--emit=shared", "-o", so] + flags,
                   check=True)
    rng = np.random.default_rng(3)
    arrays = {}
    for i, (name, sa, sb) in enumerate(CASES):
        arrays["n%d" % i] = np.array(name)
        arrays["a%d" % i] = rng.standard_normal(sa).astype(dt)
        arrays["b%d" % i] = rng.standard_normal(sb).astype(dt)
    inputs = str(tmp_path / "in.npz")
    np.savez(inputs, **arrays)
    one = run_cases(str(tmp_path), so, inputs, 1)
    two = run_cases(str(tmp_path), so, inputs, 2)
    tol = 1e-5 if et == "f32" else 1e-12
    for i, (name, sa, sb) in enumerate(CASES):
        want = (arrays["a%d" % i].astype(np.float64) @
                arrays["b%d" % i].astype(np.float64))
        assert one[i].shape == want.shape, (name, sa, sb)
        assert one[i].dtype == dt
        k = sa[-1]
        np.testing.assert_allclose(one[i], want, rtol=tol,
                                   atol=tol * max(1, k) ** 0.5,
                                   err_msg="%s %s x %s" % (name, sa, sb))
        np.testing.assert_array_equal(
            one[i], two[i], err_msg="%s %s x %s: 1 and 2 threads differ" %
            (name, sa, sb))
