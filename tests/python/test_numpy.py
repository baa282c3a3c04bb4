"""The kina package on NumPy arrays: every dtype a NumPy array can carry,
contiguous, transposed, sliced, negative-stride and broadcast (stride 0)
inputs, symbolic dims, out= (strided, aliasing an input), the Python-side
and the entry's checks raising KinaError with the seed's codes, no runtime
buffer left behind, and `python -m kina info`."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kina

RNG = np.random.default_rng(7)

NUMPY_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32,
                "i64": np.int64, "f64": np.float64, "i8": np.int8}


def sample(dtype, shape):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def test_forward_contiguous(ops):
    x = sample(np.float32, (5, 4))
    w = sample(np.float32, (4, 3))
    b = sample(np.float32, (3,))
    y = ops.forward(x, w, b)
    assert y.shape == (5, 3) and y.dtype == np.float32
    np.testing.assert_allclose(y, x @ w + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("et", sorted(NUMPY_DTYPES))
def test_every_dtype_with_views(ops, et):
    dt = NUMPY_DTYPES[et]
    base = sample(dt, (6, 8))
    views = {
        "contiguous": base[:3, :4].copy(),
        "transposed": base[:4, :3].T,
        "sliced": base[1:4, 2:6],
        "stepped": base[::2, ::2][:3, :4],
        "negative": base[::-2, ::-1][:3, :4],
        "broadcast": np.broadcast_to(base[0, :4], (3, 4)),
    }
    fn = getattr(ops, f"add_{et}")
    for name_a, a in views.items():
        for name_b, b in views.items():
            got = fn(a, b)
            want = (a + b).astype(dt)
            np.testing.assert_array_equal(got, want,
                                          err_msg=f"{et} {name_a}+{name_b}")


def test_bool(ops):
    a = RNG.integers(0, 2, size=(4, 6)).astype(np.bool_)
    np.testing.assert_array_equal(ops.not_i1(a[:, ::2]), ~a[:, ::2])
    np.testing.assert_array_equal(ops.not_i1(a.T), ~a.T)


def test_symbolic_dims_and_two_results(ops):
    a = sample(np.float32, (7,))
    b = sample(np.float32, (7,))
    s, d = ops.sum_diff(a, b[::-1])
    np.testing.assert_array_equal(s, a + b[::-1])
    np.testing.assert_array_equal(d, a - b[::-1])
    with pytest.raises(kina.KinaError) as e:
        ops.sum_diff(a, b[:5])
    assert e.value.code == -6 and e.value.name == "shape mismatch"
    assert "(N)" in e.value.message and "%a dim 0" in e.value.message


def test_out_strided_and_aliasing(ops):
    x = sample(np.float32, (5, 4))
    w = sample(np.float32, (4, 3))
    b = sample(np.float32, (3,))
    big = np.full((5, 6), -1, dtype=np.float32)
    out = big[:, ::2]
    ret = ops.forward(x, w, b, out=out)
    assert ret is out
    np.testing.assert_allclose(big[:, ::2], x @ w + b, rtol=1e-5, atol=1e-5)
    assert (big[:, 1::2] == -1).all()
    # The output aliases an input: the result is computed before writing.
    a = sample(np.float64, (3, 4))
    c = sample(np.float64, (3, 4))
    want = a + c
    ops.add_f64(a, c, out=a)
    np.testing.assert_array_equal(a, want)
    # Reversed output view.
    r = np.zeros((3, 4))
    ops.add_f64(want, c, out=r[::-1, ::-1])
    np.testing.assert_array_equal(r[::-1, ::-1], want + c)
    # A function returning its parameter, the output overlapping that input
    # shifted or reversed: the input is copied before anything is written.
    base = np.arange(8, dtype=np.float32)
    ops.ident(base[0:6], out=base[1:7])
    np.testing.assert_array_equal(base, [0, 0, 1, 2, 3, 4, 5, 7])
    base = np.arange(6, dtype=np.float32)
    ops.ident(base, out=base[::-1])
    np.testing.assert_array_equal(base, [5, 4, 3, 2, 1, 0])
    # Two results, each output overlapping the other result's input.
    p, q = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    ops.sum_diff(p.copy(), q, out=(q, p))
    np.testing.assert_array_equal(q, [1, 2, 3, 4])
    np.testing.assert_array_equal(p, [-1, 0, 1, 2])


def test_dynamic_result_needs_out(ops):
    x = sample(np.float32, (4,))
    with pytest.raises(kina.KinaError) as e:
        ops.scale(np.float32(2), x)
    assert e.value.code == -6 and "out=" in e.value.message
    y = np.empty(4, dtype=np.float32)
    ops.scale(np.float32(2), x, out=y)
    np.testing.assert_array_equal(y, 2 * x)
    # The entry itself checks the output's shape against the result's.
    with pytest.raises(kina.KinaError) as e:
        ops.scale(np.float32(2), x, out=np.empty(5, dtype=np.float32))
    assert e.value.code == -6 and "output 0 dim 0 has size 5" in e.value.message


def test_checks(ops):
    x = sample(np.float32, (5, 4))
    w = sample(np.float32, (4, 3))
    b = sample(np.float32, (3,))
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x.astype(np.float64), w, b)
    assert e.value.code == -2 and "expected f32" in e.value.message
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x, w[:3], b)
    assert e.value.code == -6 and "%w dim 0" in e.value.message
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x, w, b, out=np.empty((4, 3), dtype=np.float32))
    assert e.value.code == -6
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x, w, b, out=np.broadcast_to(np.empty(3, np.float32),
                                                 (5, 3)))
    assert e.value.code == -5 and "read-only" in e.value.message
    ro = np.zeros((5, 3), dtype=np.float32)
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x, w, b, out=np.lib.stride_tricks.as_strided(
            ro, shape=(5, 3), strides=(0, 4)))
    assert e.value.code == -8
    with pytest.raises(TypeError):
        ops.forward(x, w)
    with pytest.raises(AttributeError):
        ops.no_such_function


def test_no_leak(ops):
    x = sample(np.float32, (6, 4))
    before = ops.live_buffers()
    for _ in range(200):
        ops.forward(x.T.copy().T, sample(np.float32, (4, 3))[::1],
                    np.zeros(3, np.float32))
        ops.add_f32(x[::2], x[1::2])
    assert ops.live_buffers() == before


def test_info(ops_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..", "..",
                                     "python")
    out = subprocess.run([sys.executable, "-m", "kina", "info", ops_path],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("module ops (target cpu, kinac ")
    assert ("  forward(x: f32[N, 4], w: f32[4, 3], b: f32[3]) -> "
            "y: f32[N, 3]    [kinatd_forward]") in out.stdout
    assert "sum_diff(a: f32[N], b: f32[N]) -> (s: f32[N], d: f32[N])" \
        in out.stdout
    bad = subprocess.run([sys.executable, "-m", "kina", "info",
                          "/nonexistent.so"], env=env, capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "cannot open" in bad.stderr
