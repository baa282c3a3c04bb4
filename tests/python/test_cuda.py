"""The kina package on a library compiled with `kinac --target=cuda`
(ops.kir), on PyTorch CUDA tensors: the caller's stream (a non-default
one, and the default stream), the tensors' device (also with the current
device set elsewhere, where two GPUs allow), every dtype with contiguous,
transposed, sliced and broadcast views (passed as they are: the entry
gathers them on the caller's stream), strided and aliasing out=, results
against PyTorch eager within docs/tolerances.md, no leak over 10^4 calls
(torch.cuda.memory_allocated and the runtime's registry flat), no
device-wide synchronisation (an event on another stream still pending
after the call), and the C entry's codes for host memory (-4), overlapping
outputs (-8), with strided and negative-stride descriptors computed.

Without a CUDA device the GPU tests skip, saying so; the library is still
compiled (when ptxas is there) and its entries must return -4 naming the
missing driver or device (test_without_gpu). On the H200 the library comes
prebuilt ($KINA_TEST_CUDA_LIBRARY, scripts/gpu-artefacts.sh). Runs under
pytest, or as `python3 test_cuda.py` where pytest is absent.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import pytest
except ImportError:  # The GPU machine may lack pytest: see main().
    pytest = None

import numpy as np

import kina

try:
    import torch
except ImportError:
    torch = None

HAVE_GPU = torch is not None and torch.cuda.is_available()
NO_GPU_REASON = ("PyTorch is not installed" if torch is None else
                 "PyTorch sees no CUDA device")

_library = None


class Skip(Exception):
    pass


_as_script = False  # main(): report skips itself, even where pytest exists


def skip(reason):
    if pytest is not None and not _as_script:
        pytest.skip(reason)
    raise Skip(reason)


def cuda_library_path():
    """The cuda library: $KINA_TEST_CUDA_LIBRARY, else ops.kir compiled
    with $KINAC --target=cuda (once per process)."""
    global _library
    if _library:
        return _library
    path = os.environ.get("KINA_TEST_CUDA_LIBRARY")
    if path and os.path.exists(path):
        _library = path
        return path
    kinac = os.environ.get("KINAC")
    cuda = os.environ.get("CUDA_PATH", "/usr/local/cuda")
    if not kinac or not os.path.exists(os.path.join(cuda, "bin", "ptxas")):
        skip("no cuda library: set KINA_TEST_CUDA_LIBRARY, or KINAC with "
             "the CUDA Toolkit's ptxas present")
    work = os.environ.get("KINA_TEST_WORK") or tempfile.mkdtemp()
    out = os.path.join(work, "ops_cuda.so")
    subprocess.run([kinac, os.path.join(HERE, "ops.kir"), "--target=cuda",
                    "--emit=shared", "-o", out], check=True)
    _library = out
    return out


def load():
    return kina.load(cuda_library_path())


def need_gpu():
    if not HAVE_GPU:
        skip(NO_GPU_REASON)


def tensor_desc(m, x, dtype_code):
    """A KinaTensorDesc over a NumPy array or tensor, by hand (C tests)."""
    d = m._ffi.new("KinaTensorDesc *")
    if isinstance(x, np.ndarray):
        d.ptr = x.__array_interface__["data"][0]
        strides = [s // x.itemsize for s in x.strides]
    else:
        d.ptr = x.data_ptr()
        strides = list(x.stride())
    d.ndim = x.ndim
    for i, size in enumerate(x.shape):
        d.shape[i] = size
        d.strides[i] = strides[i]
    d.dtype = dtype_code
    return d


def last_error(m):
    return m._ffi.string(m._lib.kina_last_error()).decode()


def check_close(got, ref, tol):
    """docs/tolerances.md: |got - ref| <= tol * max(1, |ref|), ref in f64."""
    got = got.double().cpu()
    ref = ref.double().cpu()
    bound = tol * torch.clamp(ref.abs(), min=1.0)
    worst = float(((got - ref).abs() - bound).max())
    assert worst <= 0, f"outside tolerance {tol} by {worst}"


# --- Without a GPU ----------------------------------------------------------

def test_without_gpu():
    """Every entry of the cuda library returns -4 when no GPU is usable,
    naming why; the Python side refuses host memory before the call."""
    m = load()
    assert m.target == "cuda"
    if torch is not None:
        try:
            m.add_f32(torch.ones(2, 2), torch.ones(2, 2))
            raise AssertionError("CPU tensors were accepted")
        except kina.KinaError as e:
            assert e.code == -4 and "cuda target" in e.message, e
    try:
        m.add_f32(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
        raise AssertionError("NumPy arrays were accepted")
    except kina.KinaError as e:
        assert e.code == -4 and "host memory" in e.message, e
    a = np.ones((2, 3), np.float32)
    out = np.empty((2, 3), np.float32)
    descs = [tensor_desc(m, t, 0) for t in (out, a, a)]
    rc = m._lib.kinatd_add_f32(*descs, 0, 0)
    message = last_error(m)
    if HAVE_GPU:
        # Host memory: the GPU cannot read it.
        assert rc == -4 and "ordinary host memory" in message, message
    else:
        assert rc == -4, (rc, message)
        assert ("CUDA driver not found" in message
                or "no CUDA device" in message
                or "CUDA device" in message), message
    # A strided (transposed) descriptor passes the checks and then meets
    # the same GPU condition.
    t = np.ones((3, 2), np.float32).T
    descs = [tensor_desc(m, x, 0) for x in (out, t, a)]
    assert m._lib.kinatd_add_f32(*descs, 0, 0) == -4, last_error(m)
    # Overlapping outputs are refused before any GPU work (-8).
    wide = np.ones((2, 6), np.float32)
    broadcast = tensor_desc(m, out, 0)
    broadcast.strides[0] = 0
    descs = [broadcast, tensor_desc(m, a, 0), tensor_desc(m, a, 0)]
    assert m._lib.kinatd_add_f32(*descs, 0, 0) == -8
    assert "stride 0" in last_error(m)
    v = np.ones(4, np.float32)
    descs = [tensor_desc(m, x, 0) for x in (wide[0, :4], wide[0, 2:6], v, v)]
    assert m._lib.kinatd_sum_diff(*descs, 0, 0) == -8
    assert "overlaps output 0" in last_error(m)


def test_device_checks_without_gpu():
    """tests/python/multi_gpu_check.py (issue 17) where there is no GPU:
    invalid ordinals and $KINA_DEVICE values give the documented statuses
    (3 naming the missing driver, 1 for a value that is not an ordinal,
    -4 from kinatd_), the device checks are skipped saying why; exit 0.
    On a GPU machine `scripts/gpu-check.sh --multi` runs the whole script."""
    if HAVE_GPU:
        skip("a GPU is here: scripts/gpu-check.sh --multi runs these checks")
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "multi_gpu_check.py"),
         cuda_library_path()], capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0 and "FAIL" not in out, out + proc.stderr
    for name in ("invalid-device", "kina-device-invalid",
                 "kina-device-not-a-number"):
        assert f"PASS {name}:" in out, out
    assert "SKIP set-device: no CUDA device" in out, out


# --- On a GPU -----------------------------------------------------------------

DTYPES = {} if torch is None else {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i32": torch.int32, "i64": torch.int64, "f64": torch.float64,
    "i8": torch.int8}


def sample(dtype, shape, seed=0, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g).to(dtype)
    else:
        x = torch.randint(-50, 50, shape, generator=g).to(dtype)
    return x.to(device)


def test_dtypes_and_views_on_a_stream():
    need_gpu()
    m = load()
    stream = torch.cuda.Stream()
    assert stream.cuda_stream != 0
    with torch.cuda.stream(stream):
        for et, dt in DTYPES.items():
            base = sample(dt, (6, 8), seed=1)
            views = {
                "contiguous": base[:3, :4].clone(),
                "transposed": base[:4, :3].t(),
                "sliced": base[1:4, 2:6],
                "broadcast": base[0, :4].expand(3, 4),
            }
            fn = getattr(m, f"add_{et}")
            for na, a in views.items():
                for nb, b in views.items():
                    got = fn(a, b)
                    assert got.device == a.device and got.dtype == dt
                    # Elementwise adds round once: equal to eager's.
                    assert torch.equal(got, a + b), f"{et} {na}+{nb}"
        a = torch.randint(0, 2, (4, 6), device="cuda").bool()
        assert torch.equal(m.not_i1(a[:, ::2]), ~a[:, ::2])
    stream.synchronize()


def test_forward_against_eager():
    """matmul + add, f32, within the f32 class (1e-5) of eager in f64;
    strided out=, several results, a rank-0 input, on the default
    stream (raw_stream 0)."""
    need_gpu()
    m = load()
    x = sample(torch.float32, (257, 4), seed=4)
    w = sample(torch.float32, (4, 3), seed=5)
    b = sample(torch.float32, (3,), seed=6)
    with torch.cuda.stream(torch.cuda.Stream()):
        y = m.forward(x, w, b)
        check_close(y, x.double() @ w.double() + b.double(), 1e-5)
    with torch.cuda.stream(torch.cuda.default_stream()):
        big = torch.full((257, 6), -1.0, device="cuda")
        out = big[:, 1::2]
        assert m.forward(x, w, b, out=out) is out
        check_close(big[:, 1::2], x.double() @ w.double() + b.double(), 1e-5)
        assert bool((big[:, ::2] == -1).all())
        s, d = m.sum_diff(x[:, 0], x[:, 1])
        assert torch.equal(s, x[:, 0] + x[:, 1])
        assert torch.equal(d, x[:, 0] - x[:, 1])
        v = torch.arange(5.0, device="cuda")
        got = m.scale(torch.tensor(2.0, device="cuda"), v,
                      out=torch.empty(5, device="cuda"))
        assert torch.equal(got, 2 * v)
        assert torch.equal(m.ident(v), v)


def test_views_cross_as_they_are():
    """The package hands strided views to the entry unchanged: the only
    PyTorch allocation of a call on views is its output (a copy made by the
    package would be a second one); a strided out= is written in place."""
    need_gpu()
    m = load()
    base = sample(torch.float32, (64, 64), seed=7)
    a, b = base.t(), base[::2, ::2].repeat(2, 2).t()[:, :]
    m.add_f32(a, b)  # Loads the module.
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    got = m.add_f32(a, b)
    after = torch.cuda.memory_stats()["allocation.all.allocated"]
    assert after - before == 1, f"{after - before} PyTorch allocations"
    assert torch.equal(got, a + b)
    big = torch.zeros(64, 128, device="cuda")
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    m.add_f32(a, b, out=big[:, 1::2])
    after = torch.cuda.memory_stats()["allocation.all.allocated"]
    assert after == before
    assert torch.equal(big[:, 1::2], a + b)
    assert bool((big[:, ::2] == 0).all())


def test_aliasing_outputs():
    """Outputs that alias inputs: in place, transposed onto the input,
    shifted over a function's returned parameter; a broadcast out= (-8)."""
    need_gpu()
    m = load()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = sample(torch.float32, (16, 16), seed=8)
        y = sample(torch.float32, (16, 16), seed=9)
        x0 = x.clone()
        m.add_f32(x, y, out=x)
        assert torch.equal(x, x0 + y)
        x = x0.clone()
        m.add_f32(x, y, out=x.t())
        assert torch.equal(x.t(), x0 + y)
        base = torch.arange(8.0, device="cuda")
        m.ident(base[0:6], out=base[1:7])
        assert base.tolist() == [0, 0, 1, 2, 3, 4, 5, 7]
        try:
            m.add_f32(x, y, out=torch.zeros(16, device="cuda").expand(16, 16))
            raise AssertionError("a stride-0 output was accepted")
        except kina.KinaError as e:
            assert e.code == -8 and "stride 0" in e.message, e
    stream.synchronize()


def test_runs_on_the_callers_stream():
    """Work queued on the caller's stream before the call (a sleep, then a
    copy into x) must be seen by the call: its kernels are ordered after
    it on that stream, not run on a stream of the runtime's."""
    need_gpu()
    m = load()
    x = torch.zeros(1024, 4, device="cuda")
    w = sample(torch.float32, (4, 3), seed=2)
    b = torch.zeros(3, device="cuda")
    fresh = sample(torch.float32, (1024, 4), seed=3)
    m.forward(x, w, b)  # Loads the module.
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # About 25 ms.
        x.copy_(fresh)
        y = m.forward(x, w, b)
    stream.synchronize()
    check_close(y, fresh.double() @ w.double(), 1e-5)


def test_device_elsewhere():
    """The tensors' device, not the current one: with two GPUs, tensors on
    cuda:1 while cuda:0 is current; the current device is unchanged."""
    need_gpu()
    if torch.cuda.device_count() < 2:
        skip("one GPU: the current device cannot differ from the tensors' "
             "(the two-GPU check is its own issue)")
    m = load()
    torch.cuda.set_device(0)
    x = sample(torch.float32, (9, 4), device="cuda:1")
    w = sample(torch.float32, (4, 3), seed=2, device="cuda:1")
    b = sample(torch.float32, (3,), seed=3, device="cuda:1")
    with torch.cuda.stream(torch.cuda.Stream(device=1)):
        y = m.forward(x, w, b)
    assert y.device == torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    check_close(y, x.double() @ w.double() + b.double(), 1e-5)


def test_no_device_synchronisation():
    """A long kernel on another stream is still running when the call
    returns: the call synchronised its own stream only."""
    need_gpu()
    m = load()
    x = sample(torch.float32, (64, 4))
    w = sample(torch.float32, (4, 3), seed=2)
    b = sample(torch.float32, (3,), seed=3)
    m.forward(x, w, b)  # Module load and first allocations.
    torch.cuda.synchronize()
    side, mine = torch.cuda.Stream(), torch.cuda.Stream()
    done = torch.cuda.Event()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)  # About a second.
        done.record(side)
    with torch.cuda.stream(mine):
        y = m.forward(x, w, b)
    pending = not done.query()
    torch.cuda.synchronize()
    assert pending, ("the call waited for another stream's kernel: a "
                     "device-wide synchronisation")
    check_close(y, x.double() @ w.double() + b.double(), 1e-5)


def test_no_leak_over_10000_calls():
    need_gpu()
    m = load()
    x = sample(torch.float32, (33, 4))
    w = sample(torch.float32, (4, 3), seed=2)
    b = sample(torch.float32, (3,), seed=3)
    # Column-major: gathered into a runtime buffer by the entry.
    xt = x.t().contiguous().t()
    out = torch.empty(33, 3, device="cuda")
    big = torch.empty(33, 6, device="cuda")
    strided = big[:, ::2]  # Scattered into by the entry's kernel.
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(10):
            m.forward(x, w, b, out=out)
            m.forward(xt, w, b, out=strided)
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    live = m.live_buffers()
    with torch.cuda.stream(stream):
        for i in range(10_000):
            if i % 2:
                m.forward(x, w, b, out=out)
            else:
                m.forward(xt, w, b, out=strided)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == allocated
    assert m.live_buffers() == live
    check_close(out, x.double() @ w.double() + b.double(), 1e-5)
    check_close(strided, x.double() @ w.double() + b.double(), 1e-5)


def test_c_entry_codes_on_gpu():
    """From C on a GPU: CUDA memory of the right device passes, host memory
    is -4 naming it, a null descriptor -5; transposed, negative-stride and
    broadcast descriptors are computed (gathered on the caller's stream),
    a negative-stride output written in place; an invalid device -4."""
    need_gpu()
    m = load()
    a = torch.ones(2, 3, device="cuda")
    out = torch.empty(2, 3, device="cuda")
    descs = [tensor_desc(m, t, 0) for t in (out, a, a)]
    stream = torch.cuda.current_stream().cuda_stream
    assert m._lib.kinatd_add_f32(*descs, a.device.index, stream) == 0
    torch.cuda.synchronize()
    assert torch.equal(out, a + a)
    assert m._lib.kinatd_add_f32(descs[0], m._ffi.NULL, descs[2], 0,
                                 stream) == -5
    t = sample(torch.float32, (3, 2), seed=10).t()
    descs = [tensor_desc(m, x, 0) for x in (out, t, a)]
    assert m._lib.kinatd_add_f32(*descs, 0, stream) == 0, last_error(m)
    torch.cuda.synchronize()
    assert torch.equal(out, t + a)
    # Negative strides (which PyTorch cannot make): both dims reversed, for
    # an input and for the output; a stride-0 broadcast input.
    src = sample(torch.float32, (2, 3), seed=11)
    rev = tensor_desc(m, src, 0)
    rev.ptr = src.data_ptr() + 4 * (src.numel() - 1)
    rev.strides[0], rev.strides[1] = -3, -1
    row = sample(torch.float32, (3,), seed=12)
    bc = tensor_desc(m, row, 0)
    bc.ndim, bc.shape[0], bc.shape[1], bc.strides[0], bc.strides[1] = 2, 2, 3, 0, 1
    dst = torch.zeros(2, 3, device="cuda")
    rout = tensor_desc(m, dst, 0)
    rout.ptr = dst.data_ptr() + 4 * (dst.numel() - 1)
    rout.strides[0], rout.strides[1] = -3, -1
    assert m._lib.kinatd_add_f32(rout, rev, bc, 0, stream) == 0, last_error(m)
    torch.cuda.synchronize()
    assert torch.equal(dst.flip(0, 1), src.flip(0, 1) + row.expand(2, 3))
    descs = [tensor_desc(m, x, 0) for x in (out, a, a)]
    count = torch.cuda.device_count()
    assert m._lib.kinatd_add_f32(*descs, count, stream) == -4
    assert "does not exist" in last_error(m), last_error(m)


def main():
    """Runs every test without pytest; exit status 1 on a failure."""
    global _as_script
    _as_script = True
    failed = 0
    for name, fn in sorted(globals().items()):
        if not name.startswith("test_") or not callable(fn):
            continue
        try:
            fn()
            print(f"PASS {name}")
        except Skip as e:
            print(f"SKIP {name}: {e}")
        except Exception as e:  # noqa: BLE001 - report and go on
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
