"""Issue 17: compiled functions and the kina package run on the device they
are given, never device 0 by default. Run by `scripts/gpu-check.sh --multi`
(and, for the checks a machine without a GPU can make, by test_cuda.py):

    multi_gpu_check.py LIBRARY

LIBRARY is tests/python/ops.kir compiled with `kinac --target=cuda
--emit=shared`. Every check runs in a fresh process (the device selection
and $KINA_DEVICE are per process) and prints one line, `PASS name: ...`,
`SKIP name: reason` or `FAIL name: ...`:

  set-device      runtime_gpu_set_device(D) for the last device D, then
                  kina_add_f32 (the status entry): inputs and result on D
                  (cuPointerGetAttribute DEVICE_ORDINAL and CONTEXT = D's
                  primary context), the result right; with two GPUs device
                  0's primary context still inactive (nothing ran or was
                  allocated there), then device 0 in the same process.
  kina-device     the same with $KINA_DEVICE=D instead of the call.
  invalid-device  runtime_gpu_set_device(count) -> 3 "does not exist",
                  (-1) -> 1, the selection unchanged; $KINA_DEVICE=count
                  -> kina_add_f32 returns 3; $KINA_DEVICE=x -> 1;
                  kinatd_add_f32 with device_id=count -> -4. Without a
                  driver: 3 naming the missing driver.
  context-restore a context of the program's own current (cuCtxCreate),
                  then none current: after kina_add_f32 and kinatd_add_f32
                  the same one is current again; with two GPUs kinatd on
                  device 1 while device 0's primary context is current.
  torch-elsewhere (two GPUs) PyTorch tensors on cuda:1, current device
                  cuda:0, a non-default stream of cuda:1, a strided input:
                  right results on cuda:1, current device unchanged,
                  nothing allocated on cuda:0 (torch.cuda.memory_allocated
                  and cudaMemGetInfo of device 0), a long kernel on another
                  stream of cuda:1 still running after the call.
  two-threads     two threads calling m.add_f32 at once, 200 times each,
                  each on its own device and stream (with one GPU: both on
                  device 0, reported as such): all results right.

Exit status 0 when nothing failed (skips included), else 1.
"""

import ctypes
import os
import subprocess
import sys
import threading

CDEF = """
typedef struct { void *allocated; void *aligned; int64_t offset;
                 int64_t sizes[2]; int64_t strides[2]; } KinaMemRef2;
typedef struct { int64_t rank; void *descriptor; } KinaUnrankedMemRef;
typedef struct { uint64_t ptr; int32_t ndim; int64_t shape[4];
                 int64_t strides[4]; int32_t dtype; } KinaTensorDesc;
int32_t kina_add_f32(KinaMemRef2 *, const KinaMemRef2 *, const KinaMemRef2 *);
int32_t kinatd_add_f32(const KinaTensorDesc *, const KinaTensorDesc *,
                       const KinaTensorDesc *, int32_t, uint64_t);
int32_t _mlir_ciface_runtime_gpu_alloc_unranked(KinaUnrankedMemRef *, int32_t);
int32_t runtime_free(void *);
int32_t runtime_gpu_set_device(int32_t);
int32_t runtime_gpu_get_device(int32_t *);
const char *kina_last_error(void);
"""

CU_POINTER_ATTRIBUTE_CONTEXT = 1
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


# --- The CUDA driver, for checking where things are ------------------------

class Cuda:
    """The driver through ctypes: only queries and context switches."""

    def __init__(self):
        self.lib = None
        try:
            lib = ctypes.CDLL(os.environ.get("KINA_CUDA_DRIVER", "libcuda.so.1"))
        except OSError:
            return
        if lib.cuInit(0) != 0:
            return
        lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                              ctypes.c_uint64]
        self.lib = lib

    def count(self):
        if not self.lib:
            return 0
        n = ctypes.c_int(0)
        return n.value if self.lib.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0

    def handle(self, device):
        h = ctypes.c_int(0)
        assert self.lib.cuDeviceGet(ctypes.byref(h), device) == 0
        return h

    def primary(self, device):
        """Device's primary context (retains it: only for devices in use)."""
        ctx = ctypes.c_void_p()
        assert self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx),
                                                 self.handle(device)) == 0
        return ctx.value

    def primary_active(self, device):
        flags, active = ctypes.c_uint(0), ctypes.c_int(0)
        assert self.lib.cuDevicePrimaryCtxGetState(
            self.handle(device), ctypes.byref(flags), ctypes.byref(active)) == 0
        return bool(active.value)

    def pointer_device(self, pointer):
        ordinal = ctypes.c_int(-1)
        rc = self.lib.cuPointerGetAttribute(
            ctypes.addressof(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            pointer)
        assert rc == 0, f"cuPointerGetAttribute(DEVICE_ORDINAL) = {rc}"
        return ordinal.value

    def pointer_context(self, pointer):
        ctx = ctypes.c_void_p()
        rc = self.lib.cuPointerGetAttribute(
            ctypes.addressof(ctx), CU_POINTER_ATTRIBUTE_CONTEXT, pointer)
        assert rc == 0, f"cuPointerGetAttribute(CONTEXT) = {rc}"
        return ctx.value

    def current(self):
        ctx = ctypes.c_void_p()
        assert self.lib.cuCtxGetCurrent(ctypes.byref(ctx)) == 0
        return ctx.value

    def set_current(self, ctx):
        assert self.lib.cuCtxSetCurrent(ctypes.c_void_p(ctx)) == 0

    def create_context(self, device):
        """A context of the program's own (not the primary one), made
        current by cuCtxCreate; None where the driver lacks cuCtxCreate_v2."""
        create = getattr(self.lib, "cuCtxCreate_v2", None)
        if create is None:
            return None
        ctx = ctypes.c_void_p()
        if create(ctypes.byref(ctx), 0, self.handle(device)) != 0:
            return None
        return ctx.value


# --- The library ------------------------------------------------------------

class Library:
    def __init__(self, path):
        import cffi
        self.ffi = cffi.FFI()
        self.ffi.cdef(CDEF)
        self.lib = self.ffi.dlopen(os.path.abspath(path))

    def error(self):
        return self.ffi.string(self.lib.kina_last_error()).decode()

    def alloc(self, values):
        """A 2 x len/2 f32 runtime (managed) buffer on the selected device,
        filled from the host."""
        ffi = self.ffi
        d = ffi.new("KinaMemRef2 *")
        d.sizes[0], d.sizes[1] = 2, len(values) // 2
        u = ffi.new("KinaUnrankedMemRef *", {"rank": 2, "descriptor": d})
        rc = self.lib._mlir_ciface_runtime_gpu_alloc_unranked(u, 4)
        assert rc == 0, f"runtime_gpu_alloc_unranked: {rc} {self.error()}"
        floats = ffi.cast("float *", d.aligned)
        for i, v in enumerate(values):
            floats[i] = v
        return d

    def values(self, d):
        floats = self.ffi.cast("float *", d.aligned)
        return [floats[d.offset + i] for i in range(d.sizes[0] * d.sizes[1])]

    def add(self):
        """kina_add_f32 on two fresh runtime buffers: (status, inputs,
        result descriptor)."""
        a = self.alloc([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        b = self.alloc([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
        out = self.ffi.new("KinaMemRef2 *")
        rc = self.lib.kina_add_f32(out, a, b)
        return rc, (a, b), out

    def desc(self, m):
        d = self.ffi.new("KinaTensorDesc *")
        d.ptr = int(self.ffi.cast("uintptr_t", m.aligned))
        d.ndim = 2
        for k in range(2):
            d.shape[k], d.strides[k] = m.sizes[k], m.strides[k]
        d.dtype = 0
        return d


EXPECTED = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0]


def check_on(cuda, lib, device, label):
    """kina_add_f32 with `device` selected: everything on it, right."""
    rc, inputs, out = lib.add()
    assert rc == 0, f"{label}: kina_add_f32 = {rc}: {lib.error()}"
    assert lib.values(out) == EXPECTED, f"{label}: {lib.values(out)}"
    primary = cuda.primary(device)
    for name, d in (("a", inputs[0]), ("b", inputs[1]), ("result", out)):
        pointer = int(lib.ffi.cast("uintptr_t", d.allocated))
        on = cuda.pointer_device(pointer)
        assert on == device, f"{label}: {name} is on device {on}, not {device}"
        assert cuda.pointer_context(pointer) == primary, (
            f"{label}: {name} is not in device {device}'s primary context")
    for d in (*inputs, out):
        assert lib.lib.runtime_free(d.allocated) == 0, lib.error()
    return f"{label}: inputs and result on device {device} (its primary context), result right"


# --- Scenarios, each in its own process ------------------------------------

def scenario_select(path, how):
    """set-device / kina-device: the last device, then device 0."""
    cuda, lib = Cuda(), Library(path)
    count = cuda.count()
    last = count - 1
    notes = []
    if how == "set-device":
        assert lib.lib.runtime_gpu_set_device(last) == 0, lib.error()
    got = lib.ffi.new("int32_t *")
    assert lib.lib.runtime_gpu_get_device(got) == 0 and got[0] == last, got[0]
    notes.append(check_on(cuda, lib, last, f"device {last}"))
    if count >= 2:
        assert not cuda.primary_active(0), (
            "device 0's primary context became active: something ran on "
            "device 0")
        notes.append("device 0's primary context never activated")
        if how == "set-device":
            assert lib.lib.runtime_gpu_set_device(0) == 0, lib.error()
            notes.append(check_on(cuda, lib, 0, "then device 0"))
    return "; ".join(notes)


def scenario_invalid(path):
    cuda, lib = Cuda(), Library(path)
    count = cuda.count()
    notes = []
    rc = lib.lib.runtime_gpu_set_device(count)
    message = lib.error()
    assert rc == 3, (rc, message)
    if count:
        assert "does not exist" in message, message
    else:
        assert ("CUDA driver not found" in message or "no CUDA device" in message
                or "does not exist" in message), message
    notes.append(f"set_device({count}) = 3 ({message})")
    assert lib.lib.runtime_gpu_set_device(-1) == 1, lib.error()
    got = lib.ffi.new("int32_t *")
    assert lib.lib.runtime_gpu_get_device(got) == 0 and got[0] == 0, got[0]
    notes.append("set_device(-1) = 1, selection still 0")
    # kinatd with an ordinal that does not exist: -4 before any tensor is
    # read (the descriptors point at nothing the GPU can read anyway).
    ffi = lib.ffi
    ds = []
    for _ in range(3):
        d = ffi.new("KinaTensorDesc *")
        d.ptr, d.ndim, d.shape[0], d.shape[1] = 0, 2, 2, 0  # Empty.
        d.strides[0], d.strides[1] = 1, 1
        d.dtype = 0
        ds.append(d)
    rc = lib.lib.kinatd_add_f32(*ds, count, 0)
    assert rc == -4, (rc, lib.error())
    notes.append(f"kinatd device_id={count}: -4 ({lib.error()})")
    return "; ".join(notes)


def scenario_env_invalid(path):
    """kina_add_f32 under $KINA_DEVICE set by the parent: the status."""
    lib = Library(path)
    out = lib.ffi.new("KinaMemRef2 *")
    d = lib.ffi.new("KinaMemRef2 *")  # Never read: the entry stops first.
    rc = lib.lib.kina_add_f32(out, d, d)
    return f"{rc} {lib.error()}"


def scenario_context(path):
    cuda, lib = Cuda(), Library(path)
    count = cuda.count()
    notes = []
    assert lib.lib.runtime_gpu_set_device(0) == 0, lib.error()
    mine = cuda.create_context(0)
    owners = [("none current", None)]
    if mine is not None:
        owners.insert(0, ("a cuCtxCreate context", mine))
    else:
        notes.append("SKIP own context: the driver has no cuCtxCreate_v2")
    for label, ctx in owners:
        cuda.set_current(ctx)
        rc, inputs, out = lib.add()
        assert rc == 0, lib.error()
        assert cuda.current() == ctx, f"kina_add_f32 left another context than {label}"
        rc = lib.lib.kinatd_add_f32(lib.desc(out), lib.desc(inputs[0]),
                                    lib.desc(inputs[1]), 0, 0)
        assert rc == 0, lib.error()
        assert cuda.current() == ctx, f"kinatd_add_f32 left another context than {label}"
        assert lib.values(out) == EXPECTED
        for d in (*inputs, out):
            lib.lib.runtime_free(d.allocated)
        notes.append(f"{label}: restored after kina_ and kinatd_")
    if count >= 2:
        # kinatd on device 1 (its buffers there) with device 0's primary
        # context current: restored, results right.
        assert lib.lib.runtime_gpu_set_device(1) == 0, lib.error()
        rc, inputs, out = lib.add()
        assert rc == 0, lib.error()
        ctx0 = cuda.primary(0)
        cuda.set_current(ctx0)
        rc = lib.lib.kinatd_add_f32(lib.desc(inputs[0]), lib.desc(out),
                                    lib.desc(inputs[1]), 1, 0)
        assert rc == 0, lib.error()
        assert cuda.current() == ctx0, "kinatd on device 1 did not restore device 0's context"
        assert lib.values(inputs[0]) == [21.0, 42.0, 63.0, 84.0, 105.0, 126.0]
        notes.append("kinatd on device 1 with device 0's context current: restored")
    if mine is not None:
        cuda.set_current(None)
        cuda.lib.cuCtxDestroy_v2(ctypes.c_void_p(mine))
    return "; ".join(notes)


def scenario_torch_elsewhere(path):
    import torch
    import kina
    m = kina.load(path)
    torch.cuda.set_device(0)
    torch.cuda.synchronize(0)
    allocated0 = torch.cuda.memory_allocated(0)
    x = torch.randn(257, 8, device="cuda:1")
    w = torch.randn(4, 3, device="cuda:1")
    b = torch.randn(3, device="cuda:1")
    xs = x[:, ::2]  # Strided: gathered on device 1.
    m.forward(xs, w, b)  # Module load, blocks, cuBLASLt state on device 1.
    torch.cuda.synchronize(1)
    free0 = torch.cuda.mem_get_info(0)[0]
    side, mine = torch.cuda.Stream(device=1), torch.cuda.Stream(device=1)
    with torch.cuda.device(1):
        done = torch.cuda.Event()
        with torch.cuda.stream(side):
            torch.cuda._sleep(2_000_000_000)
            done.record(side)
    results = []
    for _ in range(20):
        # torch.cuda.stream(mine) makes `mine` device 1's current stream
        # and cuda:1 the current device; the current device is set back
        # to cuda:0 inside, so the call sees cuda:0 current.
        with torch.cuda.stream(mine):
            torch.cuda.set_device(0)
            assert torch.cuda.current_stream(1) == mine
            results.append(m.forward(xs, w, b))
            # cudaGetDevice reads the current context: the call put the
            # caller's (device 0's) back.
            assert torch.cuda.current_device() == 0, "context not restored"
        torch.cuda.set_device(0)
    pending = not done.query()
    assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    ref = (xs.double() @ w.double() + b.double())
    for y in results:
        assert y.device == torch.device("cuda", 1)
        assert float((y.double() - ref).abs().max()) <= 1e-4
    assert pending, "the call waited for another stream of device 1"
    assert torch.cuda.memory_allocated(0) == allocated0
    drop = free0 - torch.cuda.mem_get_info(0)[0]
    assert drop < 4 << 20, f"device 0's free memory fell by {drop} bytes"
    return ("cuda:1 tensors, current cuda:0, a non-default cuda:1 stream: "
            f"results right, no device sync, device 0 free memory change {drop} B")


def scenario_threads(path):
    import torch
    import kina
    m = kina.load(path)
    count = torch.cuda.device_count()
    devices = [0, 1] if count >= 2 else [0, 0]
    errors = []

    def work(device, seed):
        try:
            g = torch.Generator().manual_seed(seed)
            a = torch.randn(64, 48, generator=g).to(f"cuda:{device}")
            bb = torch.randn(48, 64, generator=g).to(f"cuda:{device}").t()
            stream = torch.cuda.Stream(device=device)
            with torch.cuda.stream(stream):
                for _ in range(200):
                    y = m.add_f32(a, bb)
                    if not torch.equal(y, a + bb) or y.device != a.device:
                        errors.append(f"device {device}: wrong result")
                        return
            stream.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"device {device}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(d, i))
               for i, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, "; ".join(errors)
    return f"threads on devices {devices}: 2 x 200 calls right"


# --- Driver -----------------------------------------------------------------

def run_child(path, scenario, env=None):
    """Runs a scenario in a fresh process: (ok, text)."""
    full = dict(os.environ)
    full.update(env or {})
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), path,
                           "--scenario", scenario], env=full,
                          capture_output=True, text=True, timeout=300)
    text = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        return False, (text + " " + tail).strip()
    return True, text


def have_torch_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def main(argv):
    if len(argv) >= 3 and argv[1] == "--scenario":
        path, scenario = argv[0], argv[2]
        table = {
            "set-device": lambda: scenario_select(path, "set-device"),
            "kina-device": lambda: scenario_select(path, "kina-device"),
            "invalid": lambda: scenario_invalid(path),
            "env-invalid": lambda: scenario_env_invalid(path),
            "context": lambda: scenario_context(path),
            "torch-elsewhere": lambda: scenario_torch_elsewhere(path),
            "threads": lambda: scenario_threads(path),
        }
        print(table[scenario]())
        return 0
    if len(argv) != 1:
        print(__doc__)
        return 2
    path = argv[0]
    count = Cuda().count()
    print(f"multi-gpu: {count} CUDA device(s) seen by the driver")
    failed = 0

    def report(name, ok, text):
        nonlocal failed
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {text}")

    def skip(name, reason):
        print(f"SKIP {name}: {reason}")

    if count:
        ok, text = run_child(path, "set-device")
        report("set-device", ok, text)
        ok, text = run_child(path, "kina-device",
                             {"KINA_DEVICE": str(count - 1)})
        report("kina-device", ok, text)
    else:
        skip("set-device", "no CUDA device")
        skip("kina-device", "no CUDA device")
    ok, text = run_child(path, "invalid", {"KINA_DEVICE": ""})
    report("invalid-device", ok, text)
    # $KINA_DEVICE naming a device that does not exist, and not a number.
    ok, text = run_child(path, "env-invalid", {"KINA_DEVICE": str(max(count, 1) + 7)})
    good = ok and text.startswith("3 ") and (
        "does not exist" in text or "driver not found" in text
        or "no CUDA device" in text)
    report("kina-device-invalid", good, f"kina_add_f32 = {text}")
    ok, text = run_child(path, "env-invalid", {"KINA_DEVICE": "x1"})
    good = ok and text.startswith("1 ") and "KINA_DEVICE" in text
    report("kina-device-not-a-number", good, f"kina_add_f32 = {text}")
    if count:
        ok, text = run_child(path, "context")
        report("context-restore", ok, text)
    else:
        skip("context-restore", "no CUDA device")
    if count >= 2 and have_torch_cuda():
        ok, text = run_child(path, "torch-elsewhere")
        report("torch-elsewhere", ok, text)
    elif count >= 2:
        skip("torch-elsewhere", "no CUDA PyTorch here")
    else:
        skip("torch-elsewhere", f"{count} GPU(s): cuda:1 with current device "
             "cuda:0 needs two (the one-GPU case is test_cuda.py's)")
    if count and have_torch_cuda():
        ok, text = run_child(path, "threads")
        name = "two-threads-two-devices" if count >= 2 else "two-threads-one-device"
        report(name, ok, text)
        if count < 2:
            skip("two-threads-two-devices", "one GPU: both threads ran on device 0")
    else:
        skip("two-threads-two-devices", "no CUDA device or no CUDA PyTorch")
    print(f"multi-gpu: {'all checks passed' if not failed else f'{failed} FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
