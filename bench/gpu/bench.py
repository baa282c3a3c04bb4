#!/usr/bin/env python3
"""The GPU benchmark of issue 13: kinac against PyTorch eager and torch.compile.

Runs on the GPU machine (PyTorch with CUDA; no LLVM there), on the shared
libraries bench/gpu/build.sh compiled on the development machine:

    python3 bench/gpu/bench.py LIBDIR [--baseline DIR] [--tuned DIR]
                               [--json OUT.json]
                               [--only NAME,...] [--no-compile]

For every row (CASES below) it draws random inputs (normal, never zeros) as
torch CUDA tensors, calls the kinac entry `kina_<fn>` through ctypes with
MLIR memref descriptors on the tensors' device pointers (docs/language.md,
"ABI"; device memory of the call's device is accepted by
kina_rt_gpu_check_argument), copies the result (managed memory the runtime
allocated) into a torch tensor and checks it against a float64 (float32 for
bf16/f16 inputs) PyTorch reference by the relative error norm
||out - ref|| / ||ref|| with a per-row bound, twice, on two fresh input
sets (so a result left over from an earlier call cannot pass), before timing
it: a row whose check fails is reported as WRONG, never with a time.

Timing: warm-up, then the median of repeated calls, each timed on the host
clock from the call to its return with the GPU work finished (kina_<fn>
synchronises its stream before returning; the PyTorch peers are followed by
torch.cuda.synchronize()), as a user times a call. kinac's time includes
runtime_free of its result. The device-to-device copy bandwidth (bytes read
plus written over CUDA-event time of a 1 GiB copy) is measured in the same
run; memory-bound rows print GB/s and their fraction of it, matmul rows
TFLOP/s. `ratio` is kinac's time over the best peer's (lower is better).

--check-only checks kinac's results and times nothing (scripts/gpu-check.sh
runs it on the libraries scripts/gpu-artefacts.sh builds); the exit status
is 1 when any kinac result was wrong or its call failed.

Variants: LIBDIR's libraries are "kinac"; with --baseline DIR (the same
libraries built by another kinac, e.g. main's) they are "kinac-base"; with
--tuned DIR (the libraries built with a cuda tuning cache, bench/gpu/README
or docs/autotune.md: build.sh --tuned) they are "kinac-tuned", and the
table ends with each row's tuned/default time ratio; a
kbench_kernel.so in LIBDIR (matmul on the generated kernel instead of
cuBLASLt) gives "kinac-kernel" for the matmul rows; --prefetch adds
"kinac-pf", a private copy of each library whose runtime runs with
KINA_GPU_PREFETCH=1. --profile ROW lists the GPU kernels of 3 kinac calls
of the row (torch.profiler), after all timing (CUPTI slows later launches).
Writes every number as JSON (--json), after every row.
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


# --- memref descriptors ------------------------------------------------------

_DESC = {}


def desc_type(rank):
    """ctypes struct of MLIR's ranked memref descriptor of `rank`."""
    if rank not in _DESC:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank),
                       ("strides", ctypes.c_int64 * rank)]
        _DESC[rank] = type("KinaMemRef%d" % rank, (ctypes.Structure,),
                           {"_fields_": fields})
    return _DESC[rank]


def desc_of(t):
    """A descriptor of contiguous CUDA tensor `t` (its storage, no copy)."""
    assert t.is_cuda and t.is_contiguous()
    d = desc_type(t.dim())()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


_CUDA = None


def cuda_driver():
    global _CUDA
    if _CUDA is None:
        _CUDA = ctypes.CDLL("libcuda.so.1")
        _CUDA.cuMemcpy.argtypes = [ctypes.c_uint64, ctypes.c_uint64,
                                   ctypes.c_size_t]
    return _CUDA


class Kernel:
    """kina_<fn> of a kinac shared library, called on torch CUDA tensors."""

    def __init__(self, lib, fn, out_rank):
        self.lib, self.fn = lib, fn
        self.entry = getattr(lib, "kina_" + fn)
        self.entry.restype = ctypes.c_int32
        self.out_rank = out_rank
        lib.kina_last_error.restype = ctypes.c_char_p
        lib.runtime_free.argtypes = [ctypes.c_void_p]

    def call(self, args):
        """Calls the entry; returns the result descriptor (caller frees)."""
        out = desc_type(self.out_rank)()
        ins = [desc_of(a) for a in args]
        status = self.entry(ctypes.byref(out), *[ctypes.byref(d) for d in ins])
        if status != 0:
            raise RuntimeError("kina_%s returned %d: %s" % (
                self.fn, status, self.lib.kina_last_error().decode()))
        return out

    def free(self, out):
        if out.allocated and self.lib.runtime_free(out.allocated) != 0:
            raise RuntimeError("runtime_free: " +
                               self.lib.kina_last_error().decode())

    def result(self, args, dtype):
        """Calls, copies the result into a new torch tensor, frees it."""
        out = self.call(args)
        shape = [out.sizes[i] for i in range(self.out_rank)]
        t = torch.empty(shape, dtype=dtype, device="cuda")
        nbytes = t.numel() * t.element_size()
        src = out.aligned + out.offset * t.element_size()
        torch.cuda.synchronize()
        rc = cuda_driver().cuMemcpy(t.data_ptr(), src, nbytes)
        self.free(out)
        if rc != 0:
            raise RuntimeError("cuMemcpy failed: %d" % rc)
        return t

    def timed(self, args):
        """One call as a user makes it: call, result ready, free."""
        ins = [desc_of(a) for a in args]
        ptrs = [ctypes.byref(d) for d in ins]
        out = desc_type(self.out_rank)()
        entry, free = self.entry, self.lib.runtime_free

        def run():
            status = entry(ctypes.byref(out), *ptrs)
            if status != 0:
                raise RuntimeError("kina_%s returned %d" % (self.fn, status))
            free(out.allocated)
        return run


# --- the rows ------------------------------------------------------------------

def randn(shape, dtype, scale=1.0, gen=None):
    return (torch.randn(shape, device="cuda", generator=gen) * scale).to(dtype)


def chain_ref(x, y):
    return torch.relu(torch.tanh((x * y + x) * 0.5 - y))


def gpt2_ref(x, ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_fc,
             b_fc, w_pr, b_pr, fused_attention=False):
    B, T, C = x.shape
    h = F.layer_norm(x, (C,), ln1_g, ln1_b, 1e-5)
    qkv = h @ w_qkv + b_qkv
    q, k, v = qkv.split(C, dim=-1)
    q = q.view(B, T, 12, 64).transpose(1, 2)
    k = k.view(B, T, 12, 64).transpose(1, 2)
    v = v.view(B, T, 12, 64).transpose(1, 2)
    if fused_attention:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        s = (q @ k.transpose(-1, -2)) * 0.125
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
    o = o.transpose(1, 2).reshape(B, T, C)
    x1 = x + (o @ w_o + b_o)
    h2 = F.layer_norm(x1, (C,), ln2_g, ln2_b, 1e-5)
    f = F.gelu(h2 @ w_fc + b_fc, approximate="tanh")
    return x1 + (f @ w_pr + b_pr)


def gpt2_inputs(dtype, gen):
    C = 768
    s = 0.02
    return [randn((8, 1024, C), dtype, 1.0, gen),
            randn((C,), dtype, 0.1, gen) + 1, randn((C,), dtype, 0.1, gen),
            randn((C, 3 * C), dtype, s, gen), randn((3 * C,), dtype, s, gen),
            randn((C, C), dtype, s, gen), randn((C,), dtype, s, gen),
            randn((C,), dtype, 0.1, gen) + 1, randn((C,), dtype, 0.1, gen),
            randn((C, 4 * C), dtype, s, gen), randn((4 * C,), dtype, s, gen),
            randn((4 * C, C), dtype, s, gen), randn((C,), dtype, s, gen)]


def mlp_ref(x, w1, b1, w2, b2):
    return torch.softmax(torch.relu(x @ w1 + b1) @ w2 + b2, dim=-1)


N26 = 1 << 26
S = 8192
MM = 4096

# name: (library, fn, out rank, out dtype, make inputs(gen), reference,
#        rel. error bound, kind, bytes or flops, tf32)
CASES = [
    ("chain f32 2^26", "kbench", "chain", 1, "f32",
     lambda g: [randn((N26,), torch.float32, 1, g),
                randn((N26,), torch.float32, 1, g)],
     chain_ref, 1e-5, "mem", 3 * 4 * N26, False),
    ("softmax f32 8192^2", "kbench", "softmax_f32", 2, "f32",
     lambda g: [randn((S, S), torch.float32, 2, g)],
     lambda x: torch.softmax(x, -1), 1e-5, "mem", 2 * 4 * S * S, False),
    ("softmax bf16 8192^2", "kbench", "softmax_bf16", 2, "bf16",
     lambda g: [randn((S, S), torch.bfloat16, 2, g)],
     lambda x: torch.softmax(x, -1), 1e-2, "mem", 2 * 2 * S * S, False),
    ("layer_norm f32 8192^2", "kbench", "layer_norm_f32", 2, "f32",
     lambda g: [randn((S, S), torch.float32, 2, g),
                randn((S,), torch.float32, 1, g),
                randn((S,), torch.float32, 1, g)],
     lambda x, w, b: F.layer_norm(x, (S,), w, b, 1e-5), 1e-5, "mem",
     2 * 4 * S * S, False),
    ("layer_norm bf16 8192^2", "kbench", "layer_norm_bf16", 2, "bf16",
     lambda g: [randn((S, S), torch.bfloat16, 2, g),
                randn((S,), torch.bfloat16, 1, g),
                randn((S,), torch.bfloat16, 1, g)],
     lambda x, w, b: F.layer_norm(x, (S,), w, b, 1e-5), 1e-2, "mem",
     2 * 2 * S * S, False),
    ("reduce_sum axis 1 f32", "kbench", "reduce_rows", 1, "f32",
     lambda g: [randn((S, S), torch.float32, 1, g)],
     lambda x: x.sum(1), 1e-5, "mem", 4 * S * S, False),
    ("reduce_sum axis 0 f32", "kbench", "reduce_cols", 1, "f32",
     lambda g: [randn((S, S), torch.float32, 1, g)],
     lambda x: x.sum(0), 1e-5, "mem", 4 * S * S, False),
    ("matmul bf16 4096^3", "kbench", "matmul_bf16", 2, "bf16",
     lambda g: [randn((MM, MM), torch.bfloat16, 1, g),
                randn((MM, MM), torch.bfloat16, 1, g)],
     torch.matmul, 1e-2, "flop", 2 * MM ** 3, False),
    ("matmul f16 4096^3", "kbench", "matmul_f16", 2, "f16",
     lambda g: [randn((MM, MM), torch.float16, 1, g),
                randn((MM, MM), torch.float16, 1, g)],
     torch.matmul, 5e-3, "flop", 2 * MM ** 3, False),
    ("matmul f32 4096^3", "kbench", "matmul_f32", 2, "f32",
     lambda g: [randn((MM, MM), torch.float32, 1, g),
                randn((MM, MM), torch.float32, 1, g)],
     torch.matmul, 1e-5, "flop", 2 * MM ** 3, False),
    ("matmul tf32 4096^3", "kbench_tf32", "matmul_f32", 2, "f32",
     lambda g: [randn((MM, MM), torch.float32, 1, g),
                randn((MM, MM), torch.float32, 1, g)],
     torch.matmul, 3e-3, "flop", 2 * MM ** 3, True),
    ("matmul f32 1797x64x32", "kbench", "matmul_small", 2, "f32",
     lambda g: [randn((1797, 64), torch.float32, 1, g),
                randn((64, 32), torch.float32, 1, g)],
     torch.matmul, 1e-5, "flop", 2 * 1797 * 64 * 32, False),
    ("digits MLP 1797", "mlp", "forward", 2, "f32",
     lambda g: [torch.rand((1797, 64), device="cuda", generator=g),
                randn((64, 32), torch.float32, 0.3, g),
                randn((32,), torch.float32, 0.3, g),
                randn((32, 10), torch.float32, 0.3, g),
                randn((10,), torch.float32, 0.3, g)],
     mlp_ref, 1e-5, "call", 0, False),
    ("GPT-2 block f32", "gpt2_f32", "block", 3, "f32",
     lambda g: gpt2_inputs(torch.float32, g), gpt2_ref, 1e-4, "call", 0,
     False),
    ("GPT-2 block bf16", "gpt2_bf16", "block", 3, "bf16",
     lambda g: gpt2_inputs(torch.bfloat16, g), gpt2_ref, 3e-2, "call", 0,
     False),
]


# --- measuring -------------------------------------------------------------------

def median_time(fn, warmup, min_reps, max_reps, budget_s):
    """Median seconds of fn() over repeats (fn includes its synchronisation)."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or
                                     time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def synced(fn, args):
    def run():
        fn(*args)
        torch.cuda.synchronize()
    return run


def copy_bandwidth():
    """Device-to-device copy GB/s (read + write) of 1 GiB, CUDA events."""
    n = 1 << 28
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(20):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    t = statistics.median(times)
    del src, dst
    return 2 * 4 * n / t / 1e9


_COPIES = {}


def private_copy(d, lname, tag):
    """A copy of LIBDIR/lname.so under /tmp: its own runtime instance."""
    import shutil
    src = os.path.join(d, lname + ".so")
    if not os.path.exists(src):
        return None
    dst = "/tmp/%s_%s.so" % (lname, tag)
    if dst not in _COPIES:
        shutil.copy(src, dst)
        _COPIES[dst] = ctypes.CDLL(dst)
    return _COPIES[dst]


def profile(name, run):
    """Prints the GPU kernels of 3 calls and their share of the wall time."""
    from torch.profiler import profile as prof, ProfilerActivity
    run()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 3
    events = [e for e in p.key_averages() if e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    gpu = sum(e.device_time_total for e in events) / 3
    print("profile %s: %.3f ms wall per call (profiled), %.3f ms of GPU "
          "kernels and copies" % (name, wall * 1e3, gpu / 1e3))
    for e in events[:14]:
        print("  %8.3f ms %4d x  %s" % (e.device_time_total / 3e3,
                                        e.count // 3, e.key[:90]))
    # The last call's kernels and copies in launch order (kinac names its
    # kernels after the function: the order tells them apart; `kinac
    # --stats` lists them in the same order).
    kernels = [e for e in p.events()
               if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels.sort(key=lambda e: e.time_range.start)
    per_call = len(kernels) // 3
    if per_call:
        print("  the last call, in launch order (us):")
        for i, e in enumerate(kernels[-per_call:]):
            print("    %2d %8.1f  %s" % (i, e.time_range.elapsed_us(),
                                       e.name[:90]))


def rel_error(out, ref):
    out64, ref64 = out.double(), ref.double()
    if not torch.isfinite(out64).all():
        return float("inf")
    den = torch.linalg.vector_norm(ref64).item()
    return torch.linalg.vector_norm(out64 - ref64).item() / max(den, 1e-300)


def reference(ref, args, tf32):
    """ref in float64 for f32 inputs, float32 for bf16/f16 (matmul: f32
    accumulate, as the kinac rows promise), on the same inputs."""
    up = [a.double() if a.dtype == torch.float32 else a.float() for a in args]
    return ref(*up)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("libdir")
    ap.add_argument("--baseline", help="libraries of another kinac")
    ap.add_argument("--tuned", help="the libraries built with kinac's cuda "
                    "tuning cache (the tuned column)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--only", help="comma-separated row name prefixes")
    ap.add_argument("--check-only", action="store_true",
                    help="only check kinac's results (no timing, no peers); "
                    "scripts/gpu-check.sh's step")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip the torch.compile peer")
    ap.add_argument("--budget", type=float, default=0.4,
                    help="seconds of repeats per measurement (default 0.4)")
    ap.add_argument("--profile", default="",
                    help="comma-separated row name prefixes: also list the "
                    "GPU kernels of 3 kinac calls (torch.profiler, CUPTI)")
    ap.add_argument("--prefetch", action="store_true",
                    help="also time kinac with KINA_GPU_PREFETCH=1 "
                    "(\"kinac-pf\", a second copy of each library)")
    opts = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.cuda.get_device_name()
    bw = copy_bandwidth()
    print("device: %s; torch %s; device-to-device copy %.0f GB/s" %
          (dev, torch.__version__, bw), flush=True)

    variants = [("kinac", opts.libdir)]
    if opts.baseline:
        variants.append(("kinac-base", opts.baseline))
    if opts.tuned:
        variants.append(("kinac-tuned", opts.tuned))
    libs = {}

    def library(d, name):
        path = os.path.join(d, name + ".so")
        if not os.path.exists(path):
            return None
        if path not in libs:
            libs[path] = ctypes.CDLL(path)
        return libs[path]

    rows = []
    profiles = []
    failures = checked = 0
    only = opts.only.split(",") if opts.only else None
    for (name, lib, fn, rank, odt, make, ref, bound, kind, work,
         tf32) in CASES:
        if only and not any(name.startswith(o) for o in only):
            continue
        torch.backends.cuda.matmul.allow_tf32 = tf32
        row = {"name": name, "kind": kind, "work": work, "times": {},
               "errors": {}, "reps": {}}
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1234)
        checks = [make(gen), make(gen)]
        refs = [reference(ref, a, tf32) for a in checks]
        vs = list(variants)
        if lib == "kbench" and fn.startswith("matmul"):
            vs.append(("kinac-kernel", opts.libdir, "kbench_kernel"))
        if opts.prefetch:
            vs.append(("kinac-pf", opts.libdir, lib, "pf"))
        for v in vs:
            vname, d = v[0], v[1]
            lname = v[2] if len(v) > 2 else lib
            if len(v) > 3:  # a private copy whose runtime reads the setting
                so = private_copy(d, lname, v[3])
            else:
                so = library(d, lname)
            if so is None:
                continue
            k = Kernel(so, fn, rank)
            try:
                if len(v) > 3:
                    os.environ["KINA_GPU_PREFETCH"] = "1"
                errs = [rel_error(k.result(a, DTYPES[odt]), r)
                        for a, r in zip(checks, refs)]
                os.environ.pop("KINA_GPU_PREFETCH", None)
            except RuntimeError as e:
                row["errors"][vname] = str(e)
                print("  %s %s: FAILED %s" % (name, vname, e), flush=True)
                failures += 1
                continue
            row["errors"][vname] = max(errs)
            if not max(errs) <= bound:
                print("  %s %s: WRONG (rel. error %.3g > %.3g)" %
                      (name, vname, max(errs), bound), flush=True)
                failures += 1
                continue
            if opts.check_only:
                print("  %s %s: ok (rel. error %.2g, bound %.2g)" %
                      (name, vname, max(errs), bound), flush=True)
                checked += 1
                continue
            slow = vname == "kinac-base"  # an older kinac: fewer repeats
            t, n = median_time(k.timed(checks[0]), 1 if slow else 3,
                               3 if slow else 5, 200, opts.budget)
            row["times"][vname], row["reps"][vname] = t, n
            if vname == "kinac" and any(name.startswith(p) for p in
                                        opts.profile.split(",") if p):
                # After every timing: CUPTI slows later launches.
                profiles.append((name, so, fn, rank, make))
        if opts.check_only:
            del checks, refs
            torch.cuda.empty_cache()
            continue
        # Peers on the same inputs, with the same TF32 setting.
        peers = [("eager", ref)]
        if name.startswith("GPT-2 block bf16"):
            peers.append(("eager-sdpa",
                          lambda *a: gpt2_ref(*a, fused_attention=True)))
        if not opts.no_compile:
            peers.append(("compile", torch.compile(ref)))
        for pname, pf in peers:
            try:
                with torch.no_grad():
                    got = pf(*checks[1])
                    err = rel_error(got, refs[1])
                    row["errors"][pname] = err
                    t, n = median_time(synced(pf, checks[0]), 3, 5, 200,
                                       opts.budget)
                row["times"][pname], row["reps"][pname] = t, n
            except Exception as e:  # a peer that fails is reported, not fatal
                row["errors"][pname] = "%s: %s" % (type(e).__name__, e)
                print("  %s %s: FAILED %s" % (name, pname, e), flush=True)
        peer_times = [t for p, t in row["times"].items()
                      if not p.startswith("kinac")]
        best = min(peer_times) if peer_times else None
        row["best_peer"] = best
        rows.append(row)
        line = "%-24s" % name
        for vname, t in row["times"].items():
            line += "  %s %.3f ms" % (vname, t * 1e3)
        print(line, flush=True)
        del checks, refs
        torch.cuda.empty_cache()
        if opts.json:  # after every row: a cut-off run keeps what it did
            write_json(opts.json, dev, bw, rows)

    if opts.check_only:
        print("bench: %d results checked, %d wrong or failed" %
              (checked, failures))
        return 1 if failures else 0
    for name, so, fn, rank, make in profiles:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1234)
        try:
            profile(name, Kernel(so, fn, rank).timed(make(gen)))
        except Exception as e:  # the profile is extra information
            print("  profile %s failed: %s" % (name, e))

    # The table.
    print()
    print("%-24s %-12s %10s %10s %9s %7s %7s" %
          ("row", "who", "time ms", "rate", "copy-frac", "ratio", "err"))
    for row in rows:
        best = row["best_peer"]
        for who, t in row["times"].items():
            rate, frac = "", ""
            if row["kind"] == "mem":
                gbs = row["work"] / t / 1e9
                rate, frac = "%.0f GB/s" % gbs, "%.2f" % (gbs / bw)
            elif row["kind"] == "flop":
                rate = "%.1f TF/s" % (row["work"] / t / 1e12)
            ratio = "%.2f" % (t / best) if best else ""
            err = row["errors"].get(who)
            err = "%.1e" % err if isinstance(err, float) else ""
            print("%-24s %-12s %10.3f %10s %9s %7s %7s" %
                  (row["name"], who, t * 1e3, rate, frac, ratio, err))
    if opts.tuned:  # the tuned column beside the default one
        print()
        print("%-24s %12s %12s %14s" % ("row", "default ms", "tuned ms",
                                        "tuned/default"))
        for row in rows:
            d, t = row["times"].get("kinac"), row["times"].get("kinac-tuned")
            if d and t:
                print("%-24s %12.3f %12.3f %14.3f" %
                      (row["name"], d * 1e3, t * 1e3, t / d))
    return 1 if failures else 0


def write_json(path, dev, bw, rows):
    with open(path, "w") as f:
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc)
                   .isoformat(), "device": dev, "torch": torch.__version__,
                   "copy_GBps": bw, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
