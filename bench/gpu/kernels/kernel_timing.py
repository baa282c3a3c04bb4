#!/usr/bin/python3
"""Kernel-level timing of kinac's cuda code for the memory-bound rows of
issue 13, against PyTorch eager and torch.compile and a device-to-device
copy, on one GPU (a working harness for the kernel mappers; the full
benchmark is bench/gpu/bench.py).

Two halves, because the GPU machine has no kinac:
  kernel_timing.py build OUT      (development machine) compiles KIR below
      with `kinac --target=cuda --emit=shared -O2` into OUT/rows.so;
  kernel_timing.py run OUT        (GPU machine, PyTorch with CUDA) loads
      OUT/rows.so with ctypes and, per row: random inputs (never zeros) as
      torch CUDA tensors, passed as the ABI's descriptors (results come back
      as the runtime's managed memory, read through
      __cuda_array_interface__); checks the result against torch in float64
      (||out - ref|| / ||ref||, and every element finite); then times
        - `kina call`: the whole `kina_<fn>` call (its result allocation,
          kernels, final synchronisation) plus runtime_free, CUDA events,
          median of --repeats after a warm-up;
        - `kina kernels`: the summed device time of the kernels one call
          launches (torch.profiler/CUPTI sees the driver-API launches of
          the runtime), median over the profiled calls;
        - torch eager and torch.compile (CUDA events, median; `--compile
          0` leaves torch.compile out: its compilation costs device time);
        - a device-to-device copy of 1 GiB (torch copy_), the ceiling.
      GB/s count each input read once and the output written once. Prints
      a table and writes OUT/kernel_timing.json.
The result of each call is fresh managed memory, so `kina kernels` also
pays the first touch of its pages unless the runtime places them on the
device first (run once more with CUDA_MANAGED_FORCE_DEVICE_ALLOC=1 to see
the kernels alone).
"""
import ctypes, json, os, statistics, subprocess, sys, time

KIR = """module @rows

func @chain(%x: f32[N]) -> f32[N] {
  %a = mul %x, 0.5
  %b = add %a, 1.0
  %c = abs %b
  %e = exp %c
  %f = mul %e, %x
  %h = tanh %f
  return %h
}

func @softmax_f32(%x: f32[8192, 8192]) -> f32[8192, 8192] {
  %r = softmax %x {axis = -1}
  return %r
}

func @softmax_bf16(%x: bf16[8192, 8192]) -> bf16[8192, 8192] {
  %r = softmax %x {axis = -1}
  return %r
}

func @layer_norm_f32(%x: f32[8192, 8192], %g: f32[8192], %b: f32[8192]) -> f32[8192, 8192] {
  %r = layer_norm %x, %g, %b {axis = -1}
  return %r
}

func @layer_norm_bf16(%x: bf16[8192, 8192], %g: bf16[8192], %b: bf16[8192]) -> bf16[8192, 8192] {
  %r = layer_norm %x, %g, %b {axis = -1}
  return %r
}

func @sum_rows(%x: f32[8192, 8192]) -> f32[8192] {
  %r = reduce_sum %x {axes = [1]}
  return %r
}

func @sum_cols(%x: f32[8192, 8192]) -> f32[8192] {
  %r = reduce_sum %x {axes = [0]}
  return %r
}
"""


def build(out, kinac):
    os.makedirs(out, exist_ok=True)
    src = os.path.join(out, "rows.kir")
    with open(src, "w") as fh:
        fh.write(KIR)
    subprocess.run([kinac, src, "--target=cuda", "--emit=shared", "-O2",
                    "-o", os.path.join(out, "rows.so")], check=True)


def run(out, repeats, use_compile):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    dev = "cuda"
    lib = ctypes.CDLL(os.path.join(out, "rows.so"))
    lib.runtime_free.argtypes = [ctypes.c_void_p]
    lib.kina_last_error.restype = ctypes.c_char_p

    def desc(rank):
        return type("D%d" % rank, (ctypes.Structure,), {"_fields_": [
            ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
            ("strides", ctypes.c_int64 * rank)]})

    class Managed:  # a result of the runtime, seen by torch
        def __init__(self, ptr, shape, dtype):
            typestr = {torch.float32: "<f4", torch.bfloat16: "<i2"}[dtype]
            self.__cuda_array_interface__ = {
                "shape": tuple(shape), "typestr": typestr,
                "data": (ptr, False), "version": 3}

    def kina(name, args, out_shape, dtype):
        fn = getattr(lib, "kina_" + name)
        fn.restype = ctypes.c_int32
        ds = []
        for a in args:
            d = desc(a.dim())()
            d.allocated = d.aligned = a.data_ptr()
            for i in range(a.dim()):
                d.sizes[i] = a.shape[i]
                d.strides[i] = a.stride(i)
            ds.append(d)
        o = desc(len(out_shape))()
        ptrs = [ctypes.byref(o)] + [ctypes.byref(d) for d in ds]

        def call(keep=False):
            st = fn(*ptrs)
            if st != 0:
                raise RuntimeError("kina_%s: %d %s" % (
                    name, st, lib.kina_last_error()))
            res = None
            if keep:
                t = torch.as_tensor(Managed(o.aligned, out_shape, dtype),
                                    device=dev)
                if dtype == torch.bfloat16:
                    t = t.view(torch.bfloat16)
                res = t.clone()
            lib.runtime_free(o.allocated)
            return res
        return call

    def events(fn, n):
        fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) * 1e-3)
        return statistics.median(ts)

    def kernel_time(fn, n):
        from torch.profiler import profile, ProfilerActivity
        fn()
        torch.cuda.synchronize()
        per_call = []
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
        kern = [e for e in prof.events() if e.device_type.name == "CUDA"]
        names = {}
        for e in kern:
            names[e.name] = names.get(e.name, 0) + 1
        def dur(e):
            for a in ("device_time_total", "cuda_time_total", "device_time"):
                v = getattr(e, a, None)
                if v:
                    return v
            return 0
        total = sum(dur(e) for e in kern)
        return total * 1e-6 / n, sorted(names.items())

    # The ceiling: a 1 GiB device-to-device copy (read + write counted).
    src = torch.randn(1 << 28, device=dev)
    dst = torch.empty_like(src)
    copy_s = events(lambda: dst.copy_(src), repeats)
    copy_gbs = 2 * src.numel() * 4 / copy_s / 1e9
    del src, dst

    rows = []
    M = 8192

    def row(work, name, args, out_shape, dtype, ref, torch_fn, nbytes):
        call = kina(name, args, out_shape, dtype)
        got = call(keep=True)
        want = ref()
        err = float((got.double() - want.double()).norm() /
                    want.double().norm())
        finite = bool(torch.isfinite(got).all())
        r = {"work": work, "rel_err": err, "finite": finite,
             "bytes": nbytes}
        r["kina_call_s"] = events(call, repeats)
        r["kina_kernels_s"], r["kernels"] = kernel_time(call, repeats)
        r["eager_s"] = events(torch_fn, repeats)
        if use_compile:
            try:
                comp = torch.compile(torch_fn)
                r["compile_s"] = events(comp, repeats)
            except Exception as exc:  # keep the other numbers
                r["compile_error"] = str(exc)[:200]
        for k in ("kina_call_s", "kina_kernels_s", "eager_s", "compile_s"):
            if k in r and r[k]:
                r[k[:-2] + "_gbs"] = nbytes / r[k] / 1e9
        r["kernels_over_copy"] = r.get("kina_kernels_gbs", 0) / copy_gbs
        rows.append(r)
        print("%-26s err %.1e  call %.3f ms  kernels %.3f ms (%.0f GB/s, "
              "%.0f%% of copy)  eager %.3f ms  compile %s ms" % (
                  work, err, 1e3 * r["kina_call_s"],
                  1e3 * r["kina_kernels_s"], r.get("kina_kernels_gbs", 0),
                  100 * r["kernels_over_copy"], 1e3 * r["eager_s"],
                  "%.3f" % (1e3 * r["compile_s"]) if "compile_s" in r
                  else "-"), flush=True)

    n = 1 << 26
    x = torch.empty(n, device=dev).uniform_(-3, 3)

    def chain_t():
        a = x * 0.5 + 1.0
        return torch.tanh(torch.exp(torch.abs(a)) * x)
    row("chain 6 ops 2^26 f32", "chain", [x], [n], torch.float32,
        lambda: chain_t().double(), chain_t, 2 * 4 * n)
    del x
    for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        es = 4 if dt == torch.float32 else 2
        xm = torch.randn(M, M, device=dev).to(dt)
        row("softmax [8192^2] " + tag, "softmax_" + tag, [xm], [M, M], dt,
            lambda: torch.softmax(xm.double(), -1),
            lambda: torch.softmax(xm, -1), 2 * es * M * M)
        g = torch.randn(M, device=dev).to(dt)
        b = torch.randn(M, device=dev).to(dt)
        row("layer_norm [8192^2] " + tag, "layer_norm_" + tag, [xm, g, b],
            [M, M], dt,
            lambda: F.layer_norm(xm.double(), (M,), g.double(), b.double()),
            lambda: F.layer_norm(xm, (M,), g, b), 2 * es * M * M)
        del xm
    xm = torch.randn(M, M, device=dev)
    row("reduce_sum axis 1 f32", "sum_rows", [xm], [M], torch.float32,
        lambda: xm.double().sum(1), lambda: xm.sum(1), 4 * M * M)
    row("reduce_sum axis 0 f32", "sum_cols", [xm], [M], torch.float32,
        lambda: xm.double().sum(0), lambda: xm.sum(0), 4 * M * M)
    print("device-to-device copy: %.0f GB/s; CUDA_MANAGED_FORCE_DEVICE_ALLOC"
          "=%s" % (copy_gbs, os.environ.get(
              "CUDA_MANAGED_FORCE_DEVICE_ALLOC", "")))
    tag = os.environ.get("CUDA_MANAGED_FORCE_DEVICE_ALLOC", "0")
    with open(os.path.join(out, "kernel_timing-%s.json" % tag), "w") as fh:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "device": torch.cuda.get_device_name(),
                   "copy_gbs": copy_gbs, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run"):
        sys.exit("usage: kernel_timing.py build|run OUT [--kinac K] "
                 "[--repeats N] [--compile 0|1]")
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    if sys.argv[1] == "build":
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        build(sys.argv[2], opts.get("--kinac",
                                    os.path.join(root, "build/bin/kinac")))
    else:
        run(sys.argv[2], int(opts.get("--repeats", "20")),
            opts.get("--compile", "1") == "1")
