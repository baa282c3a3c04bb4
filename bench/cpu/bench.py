#!/usr/bin/python3
"""CPU benchmark: kinac's code against NumPy, PyTorch CPU and OpenBLAS.

One command (`bench/cpu/bench.py`), one thread everywhere (kinac's code is
single-threaded; OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)). Compiles
the programs below with `kinac --emit=shared -O2` (plus `--mcpu`, default
native), loads the library with ctypes and calls each entry `kina_<f>`
through the ABI's descriptors (include/kina/abi.h); each call allocates its
result, which is released with runtime_free (both timed, as a caller pays
them). On the same random inputs, after a warm-up call, it takes the median
of --repeats timed runs of each:
  - `chain`: 8 elementwise ops (mul add abs neg exp mul sub tanh) on 2^24
    f32, GB/s counting one read of x and one write of the result;
  - `softmax` and `layer_norm` on [4096, 4096] f32 (GB/s: one read, one
    write);
  - `matmul` f32 1024 x 1024 x 1024 (GFLOP/s), with OpenBLAS cblas_sgemm
    when libopenblas is installed (KINA_WITH_BENCH=1 scripts/install-deps.sh);
  - the digits MLP (samples/digits/mlp.kir) at batch 1 and 1797 (latency);
  - memcpy of 64 MiB (np.copyto; GB/s counting read + write), the bandwidth
    the memory-bound rows are compared with.
Prints a table (median time, GB/s or GFLOP/s, kinac / best peer as a ratio
of times: below 1 means kinac is faster) and writes JSON (--json).
With --tuned, also the matmuls 1024, 2048 and [1797,64]x[64,32] built by
default and with `--autotune` (--autotune-budget seconds each, the choices
kept in --tuning-cache), side by side (tuned_matmuls).
Results move with the machine's load: say what else ran when recording.
"""
import argparse, ctypes, ctypes.util, datetime, json, os, platform
import statistics, subprocess, sys, tempfile, time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KIR = """module @bench

func @chain(%x: f32[N]) -> f32[N] {
  %a = mul %x, 0.5
  %b = add %a, 1.0
  %c = abs %b
  %d = neg %c
  %e = exp %d
  %f = mul %e, %x
  %g = sub %f, 0.25
  %h = tanh %g
  return %h
}

func @softmax(%x: f32[M, N]) -> f32[M, N] {
  %r = softmax %x {axis = -1}
  return %r
}

func @layer_norm(%x: f32[M, N], %g: f32[N], %b: f32[N]) -> f32[M, N] {
  %r = layer_norm %x, %g, %b {axis = -1}
  return %r
}

func @matmul(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {
  %c = matmul %a, %b
  return %c
}
"""


def np_chain(x):
    a = x * np.float32(0.5)
    a += np.float32(1.0)
    np.abs(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    a *= x
    a -= np.float32(0.25)
    return np.tanh(a, out=a)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def np_layer_norm(x, g, b, eps=1e-5):
    m = x.mean(axis=-1, keepdims=True)
    d = x - m
    v = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(v + np.float32(eps)) * g + b


def np_mlp(x, w1, b1, w2, b2):
    return np_softmax(np.maximum(x @ w1 + b1, 0) @ w2 + b2)


def descriptor(rank):
    return type("MemRef%d" % rank, (ctypes.Structure,), {"_fields_": [
        ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
        ("strides", ctypes.c_int64 * rank)]})


class Kina:
    """Calls `kina_<name>` of a kinac shared library on C-contiguous f32
    arrays; returns the result as a NumPy array (copied) when asked."""

    def __init__(self, lib):
        self.lib = ctypes.CDLL(lib)
        self.lib.runtime_free.argtypes = [ctypes.c_void_p]

    def make(self, name, args, out_rank):
        fn = getattr(self.lib, "kina_" + name)
        fn.restype = ctypes.c_int32
        descs = []
        for a in args:
            d = descriptor(a.ndim)()
            d.allocated = d.aligned = a.ctypes.data
            d.offset = 0
            for i in range(a.ndim):
                d.sizes[i] = a.shape[i]
                d.strides[i] = a.strides[i] // a.itemsize
            descs.append(d)
        out = descriptor(out_rank)()
        ptrs = [ctypes.byref(out)] + [ctypes.byref(d) for d in descs]
        free = self.lib.runtime_free

        def call(keep=False):
            st = fn(*ptrs)
            if st != 0:
                raise RuntimeError("kina_%s returned %d" % (name, st))
            res = None
            if keep:
                n = int(np.prod([out.sizes[i] for i in range(out_rank)]))
                buf = (ctypes.c_float * n).from_address(out.aligned +
                                                        4 * out.offset)
                res = np.ctypeslib.as_array(buf).copy().reshape(
                    [out.sizes[i] for i in range(out_rank)])
            free(out.allocated)
            return res
        return call


def timeit(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def openblas():
    name = ctypes.util.find_library("openblas")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    f = lib.cblas_sgemm
    f.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p,
                                       ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_int, ctypes.c_float,
                                       ctypes.c_void_p, ctypes.c_int]
    return f


TUNED = [  # name, module, --tune-shape, operand shapes
    ("matmul 1024", "func @f(%a: f32[1024, 1024], %b: f32[1024, 1024]) -> "
     "f32[1024, 1024] {\n  %c = matmul %a, %b\n  return %c\n}\n", None,
     [(1024, 1024), (1024, 1024)]),
    ("matmul 2048", "func @f(%a: f32[2048, 2048], %b: f32[2048, 2048]) -> "
     "f32[2048, 2048] {\n  %c = matmul %a, %b\n  return %c\n}\n", None,
     [(2048, 2048), (2048, 2048)]),
    ("matmul [1797,64]x[64,32]", "func @f(%a: f32[N, 64], %b: f32[64, 32]) "
     "-> f32[N, 32] {\n  %c = matmul %a, %b\n  return %c\n}\n", "N=1797",
     [(1797, 64), (64, 32)]),
]


def tuned_matmuls(args, tmp, rng):
    """The matmuls of TUNED built by default and with --autotune (the cache
    --tuning-cache, kept), timed alike; returns the rows."""
    rows = []
    for i, (work, body, shape, shapes) in enumerate(TUNED):
        path = os.path.join(tmp, "tuned%d.kir" % i)
        with open(path, "w") as fh:
            fh.write("module @tuned%d\n" % i + body)
        ins = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
        times, outs = {}, {}
        for kind, extra in (("default", []), ("tuned", [
                "--autotune", "--tuning-cache", args.tuning_cache,
                "--autotune-budget", str(args.autotune_budget)] +
                (["--tune-shape", shape] if shape else []))):
            so = os.path.join(tmp, "tuned%d-%s.so" % (i, kind))
            cmd = [args.kinac, path, "--emit=shared", "-O" + args.opt,
                   "-o", so] + extra
            if args.mcpu:
                cmd.append("--mcpu=" + args.mcpu)
            subprocess.run(cmd, check=True)
            call = Kina(so).make("f", ins, 2)
            outs[kind] = call(keep=True)
            times[kind] = timeit(call, args.repeats)
        ref = ins[0] @ ins[1]
        err = max(float(np.max(np.abs(o - ref) / np.maximum(1, np.abs(ref))))
                  for o in outs.values())
        flops = 2 * shapes[0][0] * shapes[0][1] * shapes[1][1]
        rows.append({"work": work + " f32", "default_s": times["default"],
                     "tuned_s": times["tuned"],
                     "tuned_over_default": times["tuned"] / times["default"],
                     "default_gflops": flops / times["default"] / 1e9,
                     "tuned_gflops": flops / times["tuned"] / 1e9,
                     "max_rel_err_vs_numpy": err})
    print("%-30s %12s %12s %8s" % ("tuned", "default ms", "tuned ms",
                                   "ratio"))
    for r in rows:
        print("%-30s %7.2f %4.0f %7.2f %4.0f %8.2f  GFLOP/s; err %.1e" % (
            r["work"], 1e3 * r["default_s"], r["default_gflops"],
            1e3 * r["tuned_s"], r["tuned_gflops"], r["tuned_over_default"],
            r["max_rel_err_vs_numpy"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinac", default=os.path.join(ROOT, "build/bin/kinac"))
    ap.add_argument("--mcpu", default="native")
    ap.add_argument("-O", dest="opt", default="2")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", default="bench-cpu.json")
    ap.add_argument("--tuned", action="store_true",
                    help="also default vs --autotune matmuls (TUNED)")
    ap.add_argument("--tuned-only", action="store_true",
                    help="only the default vs --autotune matmuls")
    ap.add_argument("--tuning-cache", default="bench-cpu-tuning.json")
    ap.add_argument("--autotune-budget", type=float, default=60)
    args = ap.parse_args()
    if args.tuned_only:
        with tempfile.TemporaryDirectory() as tmp:
            tuned_matmuls(args, tmp, np.random.default_rng(0))
        return 0
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        libs = {}
        for name, src in (("bench", KIR), ("mlp", open(os.path.join(
                ROOT, "samples/digits/mlp.kir")).read())):
            path = os.path.join(tmp, name + ".kir")
            with open(path, "w") as fh:
                fh.write(src)
            so = os.path.join(tmp, name + ".so")
            cmd = [args.kinac, path, "--emit=shared", "-O" + args.opt,
                   "-o", so]
            if args.mcpu:
                cmd.append("--mcpu=" + args.mcpu)
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            rows.append({"work": "compile " + name, "kinac_s":
                         time.perf_counter() - t})
            libs[name] = Kina(so)
        k = libs["bench"]

        def row(work, kcall, peers, check, unit, amount):
            out = kcall(keep=True)
            ref = check()
            err = float(np.max(np.abs(out - ref) / np.maximum(1, np.abs(ref))))
            r = {"work": work, "kinac_s": timeit(kcall, args.repeats),
                 "max_rel_err_vs_numpy": err, "unit": unit}
            for pname, pfn in peers.items():
                r[pname + "_s"] = timeit(pfn, args.repeats)
            best = min(r[p + "_s"] for p in peers)
            r["kinac_over_best_peer"] = r["kinac_s"] / best
            r["kinac_rate"] = amount / r["kinac_s"] / 1e9
            for p in peers:
                r[p + "_rate"] = amount / r[p + "_s"] / 1e9
            rows.append(r)

        n = 1 << 24
        mc_src = rng.standard_normal(n).astype(np.float32)
        mc_dst = np.empty_like(mc_src)
        t = timeit(lambda: np.copyto(mc_dst, mc_src), args.repeats)
        rows.append({"work": "memcpy 64 MiB", "numpy_s": t, "unit": "GB/s",
                     "numpy_rate": 2 * mc_src.nbytes / t / 1e9})

        x = rng.uniform(-3, 3, n).astype(np.float32)
        peers = {"numpy": lambda: np_chain(x)}
        if torch:
            tx = torch.from_numpy(x)
            peers["torch"] = lambda: torch.tanh(
                torch.exp(-torch.abs(tx * 0.5 + 1.0)) * tx - 0.25)
        row("chain 8 ops 2^24 f32", k.make("chain", [x], 1), peers,
            lambda: np_chain(x), "GB/s", 2 * x.nbytes)

        m = rng.standard_normal((4096, 4096)).astype(np.float32)
        peers = {"numpy": lambda: np_softmax(m)}
        if torch:
            tm = torch.from_numpy(m)
            peers["torch"] = lambda: torch.softmax(tm, -1)
        row("softmax [4096,4096] f32", k.make("softmax", [m], 2), peers,
            lambda: np_softmax(m), "GB/s", 2 * m.nbytes)

        g = rng.standard_normal(4096).astype(np.float32)
        b = rng.standard_normal(4096).astype(np.float32)
        peers = {"numpy": lambda: np_layer_norm(m, g, b)}
        if torch:
            tg, tb = torch.from_numpy(g), torch.from_numpy(b)
            peers["torch"] = lambda: torch.nn.functional.layer_norm(
                tm, (4096,), tg, tb, 1e-5)
        row("layer_norm [4096,4096] f32", k.make("layer_norm", [m, g, b], 2),
            peers, lambda: np_layer_norm(m, g, b), "GB/s", 2 * m.nbytes)

        s = 1024
        a = rng.standard_normal((s, s)).astype(np.float32)
        bb = rng.standard_normal((s, s)).astype(np.float32)
        c = np.empty((s, s), np.float32)
        peers = {"numpy": lambda: a @ bb}
        if torch:
            ta, tbb = torch.from_numpy(a), torch.from_numpy(bb)
            peers["torch"] = lambda: ta @ tbb
        sgemm = openblas()
        if sgemm:
            peers["openblas"] = lambda: sgemm(101, 111, 111, s, s, s, 1.0,
                                              a.ctypes.data, s,
                                              bb.ctypes.data, s, 0.0,
                                              c.ctypes.data, s)
        row("matmul 1024 f32", k.make("matmul", [a, bb], 2), peers,
            lambda: a @ bb, "GFLOP/s", 2 * s ** 3)

        d = os.path.join(ROOT, "samples/digits/data")
        w1 = np.fromfile(os.path.join(d, "w1.bin"), np.float32).reshape(64, 32)
        b1 = np.fromfile(os.path.join(d, "b1.bin"), np.float32)
        w2 = np.fromfile(os.path.join(d, "w2.bin"), np.float32).reshape(32, 10)
        b2 = np.fromfile(os.path.join(d, "b2.bin"), np.float32)
        imgs = np.fromfile(os.path.join(d, "images.bin"),
                           np.float32).reshape(-1, 64)
        for batch in (1, 1797):
            xi = np.ascontiguousarray(imgs[:batch])
            ws = [xi, w1, b1, w2, b2]
            peers = {"numpy": lambda: np_mlp(*ws)}
            if torch:
                tw = [torch.from_numpy(w) for w in ws]
                peers["torch"] = lambda: torch.softmax(torch.relu(
                    tw[0] @ tw[1] + tw[2]) @ tw[3] + tw[4], -1)
            row("digits MLP batch %d" % batch,
                libs["mlp"].make("forward", ws, 2), peers,
                lambda: np_mlp(*ws), "GFLOP/s",
                2 * batch * (64 * 32 + 32 * 10))
        tuned = tuned_matmuls(args, tmp, rng) if args.tuned else []

    print("%-28s %12s %10s  %s" % ("work", "kinac ms", "rate", "peers (ms, rate)"))
    for r in rows:
        if "kinac_over_best_peer" not in r:
            extra = ("%.1f GB/s" % r["numpy_rate"]) if "numpy_rate" in r else ""
            print("%-28s %12.2f %10s  %s" % (r["work"], 1e3 * r.get(
                "kinac_s", r.get("numpy_s", 0)), "", extra))
            continue
        peers = ", ".join("%s %.2f ms %.1f" % (p[:-2], 1e3 * r[p], r[p[:-2] + "_rate"])
                          for p in r if p.endswith("_s") and p != "kinac_s")
        print("%-28s %12.2f %7.1f %s  %s; kinac/best %.2f (err %.1e)" % (
            r["work"], 1e3 * r["kinac_s"], r["kinac_rate"], r["unit"], peers,
            r["kinac_over_best_peer"], r["max_rel_err_vs_numpy"]))
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "mcpu": args.mcpu, "opt": args.opt,
              "threads": 1, "repeats": args.repeats,
              "load_average": os.getloadavg(), "rows": rows,
              "tuned": tuned}
    with open(args.json, "w") as fh:
        json.dump(report, fh, indent=1)
    print("wrote", args.json, "; load average", os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
