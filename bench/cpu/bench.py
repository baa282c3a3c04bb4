#!/usr/bin/python3
"""CPU benchmark: kinac's code against OpenBLAS, NumPy, PyTorch CPU and IREE.

One command (`bench/cpu/bench.py`, /usr/bin/python3 with NumPy; PyTorch,
OpenBLAS and IREE when present). In one run, on the same random inputs,
after a warm-up (WARMUP_S of calls), the median of at least --repeats
timed runs of each, and of at least MIN_TIME_S of them:
  - `matmul` f32 256, 512, 1024, 2048 (square), [1797, 64] x [64, 32] and
    batched [12, 1024, 64] x [12, 64, 1024] (GFLOP/s): OpenBLAS
    cblas_sgemm (a loop over the batch for the batched one), NumPy, PyTorch;
  - `chain` (8 elementwise ops: mul add abs neg exp mul sub tanh) on 2^24
    f32, `math` (sin, cos, log and pow of each element: libmvec's vector
    functions in kinac's code) on 2^24 f32, `softmax` and `layer_norm` on [4096, 4096] f32 (GB/s counting one
    read and one write), each also as a fraction of a measured memcpy of
    the same bytes (the fastest of np.copyto and torch's copy_);
  - the digits MLP (samples/digits/mlp.kir) at batch 1 and 1797 (latency);
  - IREE (`pip install iree-base-compiler iree-base-runtime`; found on
    PATH or with --iree-bin): the same programs as linalg MLIR, compiled
    with `iree-compile --iree-hal-target-backends=llvm-cpu
    --iree-llvmcpu-target-cpu=host` and timed with `iree-benchmark-module`
    (`--device=local-sync` at 1 thread, `local-task` with
    --task_topology_group_count=N at N threads) on the same inputs (.npy);
  - the compile time of each program (kinac --emit=shared, and IREE's).
kinac's programs are compiled with `kinac --emit=shared -O2` twice: with
the default processor (no --mcpu: the multiversioned object, dispatching
on this host) and with --mcpu=native; each is a column. With --tuned, a
third column: the matmul, softmax and layer_norm programs built with
`--autotune` at one size each
(tuned_flags, TUNE_SHAPES; --autotune-budget seconds each, the choices kept
in --tuning-cache).
Each thread count of --threads (default `1,all`) runs in a subprocess of
its own whose environment caps every library before it loads:
KINA_NUM_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS,
torch.set_num_threads. kinac's calls go through `kina_<f>` with the ABI's
descriptors (include/kina/abi.h); each call allocates its result, released
with runtime_free (both timed, as a caller pays them). Above one thread,
every timing starts SETTLE_S after the one before: OpenBLAS's worker
threads (used by the openblas, numpy and torch peers) keep spinning with
sched_yield for about 2^28 cycles (OpenBLAS's THREAD_TIMEOUT, ~0.1 s)
after each call, and would otherwise share a core with the next column's
second thread (measured: 33 ms of CPU in the 0.5 s after five 512 sgemm
calls on a loaded machine, 0 with OPENBLAS_THREAD_TIMEOUT=4; without the
pause the default column of `matmul 1024` at 2 threads, timed right after
the previous row's peers, ran no faster than at 1 thread).
Prints a table (median ms, GB/s or GFLOP/s, and kinac / best peer as a
ratio of rates: above 1 means kinac is faster) and writes JSON (--json,
default bench/cpu/results-<date>.json). A missing peer is a cell saying
so; the rest still runs. Results move with the machine's load: the JSON
records the load average; say what else ran when recording.
"""
import argparse, ctypes, ctypes.util, datetime, json, os, platform, re, shutil
import statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# One Kina IR module per program, so that each one's compile time shows.
PROGRAMS = {
    "chain": """module @chain
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
""",
    "math": """module @math
func @math(%x: f32[N]) -> f32[N] {
  %s = sin %x
  %c = cos %x
  %a = abs %x
  %b = add %a, 1.0
  %l = log %b
  %p = pow %b, %s
  %t = mul %c, %l
  %r = add %t, %p
  return %r
}
""",
    "softmax": """module @softmax
func @softmax(%x: f32[M, N]) -> f32[M, N] {
  %r = softmax %x {axis = -1}
  return %r
}
""",
    "layer_norm": """module @layer_norm
func @layer_norm(%x: f32[M, N], %g: f32[N], %b: f32[N]) -> f32[M, N] {
  %r = layer_norm %x, %g, %b {axis = -1}
  return %r
}
""",
    "matmul": """module @matmul
func @matmul(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {
  %c = matmul %a, %b
  return %c
}
""",
    "bmm": """module @bmm
func @bmm(%a: f32[B, M, K], %b: f32[B, K, N]) -> f32[B, M, N] {
  %c = matmul %a, %b
  return %c
}
""",
    "mlp": None,  # samples/digits/mlp.kir, function forward
}
ENTRY = {"mlp": "forward"}


# The size each tunable program is tuned at (kinac --autotune --tune-shape):
# one build per program serves all its rows, so it is tuned at the size the
# issue's table leads with.
TUNE_SHAPES = {"matmul": "M=1024,K=1024,N=1024", "bmm": "B=12,M=1024,K=64,N=1024",
               "mlp": "N=1797", "softmax": "M=4096,N=4096",
               "layer_norm": "M=4096,N=4096"}


def tuned_flags(program, args):
    """The extra kinac flags of `program`'s `tuned` column (a list), or None
    for no tuned column: with --tuned, `--autotune` at TUNE_SHAPES[program]
    on this host (--mcpu=native, like the native column), the choices kept
    in --tuning-cache so that a second run reuses them without measuring."""
    if not args.tuned or program not in TUNE_SHAPES:
        return None
    return ["--mcpu=native", "--autotune", "--tune-shape",
            TUNE_SHAPES[program], "--tuning-cache", args.tuning_cache,
            "--autotune-budget", str(args.autotune_budget)]


# ---------------------------------------------------------------------------
# IREE: the same programs as linalg on tensors (static shapes).


def _t(shape):
    return "tensor<%sxf32>" % "x".join(str(d) for d in shape)


def iree_matmul(m, k, n, batch=None):
    bs = [batch] if batch else []
    a, b, c = _t(bs + [m, k]), _t(bs + [k, n]), _t(bs + [m, n])
    op = "linalg.batch_matmul" if batch else "linalg.matmul"
    return f"""func.func @main(%a: {a}, %b: {b}) -> {c} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {c}
  %f = linalg.fill ins(%z : f32) outs(%e : {c}) -> {c}
  %r = {op} ins(%a, %b : {a}, {b}) outs(%f : {c}) -> {c}
  return %r : {c}
}}
"""


def _iree_elementwise(n, body):
    """A 1-D f32 linalg.generic of `n` elements whose region computes `body`
    (lines over the block argument %v, the last value %y)."""
    t = _t([n])
    return f"""#m = affine_map<(i) -> (i)>
func.func @main(%x: {t}) -> {t} {{
  %e = tensor.empty() : {t}
  %r = linalg.generic {{indexing_maps = [#m, #m], iterator_types = ["parallel"]}}
      ins(%x : {t}) outs(%e : {t}) {{
  ^bb0(%v: f32, %o: f32):
{body}
    linalg.yield %y : f32
  }} -> {t}
  return %r : {t}
}}
"""


def iree_chain(n):
    return _iree_elementwise(n, """    %h = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %q = arith.constant 0.25 : f32
    %a = arith.mulf %v, %h : f32
    %b = arith.addf %a, %one : f32
    %c = math.absf %b : f32
    %d = arith.negf %c : f32
    %x1 = math.exp %d : f32
    %f = arith.mulf %x1, %v : f32
    %g = arith.subf %f, %q : f32
    %y = math.tanh %g : f32""")


def iree_math(n):
    return _iree_elementwise(n, """    %one = arith.constant 1.0 : f32
    %s = math.sin %v : f32
    %c = math.cos %v : f32
    %a = math.absf %v : f32
    %b = arith.addf %a, %one : f32
    %l = math.log %b : f32
    %p = math.powf %b, %s : f32
    %t = arith.mulf %c, %l : f32
    %y = arith.addf %t, %p : f32""")


def _softmax_body(t, m):
    return f"""  %se = tensor.empty() : {t}
  %sm = linalg.softmax dimension(1) ins(%SX : {t}) outs(%se : {t}) -> {t}"""


def iree_softmax(m, n):
    t = _t([m, n])
    return f"""func.func @main(%x: {t}) -> {t} {{
{_softmax_body(t, m).replace('%SX', '%x')}
  return %sm : {t}
}}
"""


def iree_layer_norm(m, n):
    t, r, v = _t([m, n]), _t([m]), _t([n])
    return f"""#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @main(%x: {t}, %g: {v}, %b: {v}) -> {t} {{
  %z = arith.constant 0.0 : f32
  %nf = arith.constant {float(n)} : f32
  %eps = arith.constant 1.0e-05 : f32
  %re = tensor.empty() : {r}
  %rz = linalg.fill ins(%z : f32) outs(%re : {r}) -> {r}
  %sum = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%x : {t}) outs(%rz : {r}) {{
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }} -> {r}
  %var = linalg.generic {{indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%x, %sum : {t}, {r}) outs(%rz : {r}) {{
  ^bb0(%a: f32, %s: f32, %acc: f32):
    %mean = arith.divf %s, %nf : f32
    %d = arith.subf %a, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    %n2 = arith.addf %d2, %acc : f32
    linalg.yield %n2 : f32
  }} -> {r}
  %e = tensor.empty() : {t}
  %y = linalg.generic {{indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %sum, %var, %g, %b : {t}, {r}, {r}, {v}, {v}) outs(%e : {t}) {{
  ^bb0(%a: f32, %s: f32, %q: f32, %gg: f32, %bb: f32, %o: f32):
    %mean = arith.divf %s, %nf : f32
    %vv = arith.divf %q, %nf : f32
    %ve = arith.addf %vv, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %a, %mean : f32
    %nn = arith.mulf %d, %rs : f32
    %sc = arith.mulf %nn, %gg : f32
    %out = arith.addf %sc, %bb : f32
    linalg.yield %out : f32
  }} -> {t}
  return %y : {t}
}}
"""


def iree_mlp(n):
    x, w1, b1, w2, b2 = (_t([n, 64]), _t([64, 32]), _t([32]), _t([32, 10]),
                         _t([10]))
    h, l = _t([n, 32]), _t([n, 10])
    return f"""#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @main(%x: {x}, %w1: {w1}, %b1: {b1}, %w2: {w2}, %b2: {b2}) -> {l} {{
  %z = arith.constant 0.0 : f32
  %he = tensor.empty() : {h}
  %hz = linalg.fill ins(%z : f32) outs(%he : {h}) -> {h}
  %h = linalg.matmul ins(%x, %w1 : {x}, {w1}) outs(%hz : {h}) -> {h}
  %a = linalg.generic {{indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%h, %b1 : {h}, {b1}) outs(%he : {h}) {{
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }} -> {h}
  %le = tensor.empty() : {l}
  %lz = linalg.fill ins(%z : f32) outs(%le : {l}) -> {l}
  %lm = linalg.matmul ins(%a, %w2 : {h}, {w2}) outs(%lz : {l}) -> {l}
  %lb = linalg.generic {{indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%lm, %b2 : {l}, {b2}) outs(%le : {l}) {{
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  }} -> {l}
{_softmax_body(l, n).replace('%SX', '%lb')}
  return %sm : {l}
}}
"""


def find_iree(bindir):
    """(iree-compile, iree-benchmark-module) paths, or None with why."""
    tools = []
    for name in ("iree-compile", "iree-benchmark-module"):
        path = (os.path.join(bindir, name) if bindir else shutil.which(name))
        if not path or not os.access(path, os.X_OK):
            home = os.path.expanduser("~/.pyenv/shims/" + name)
            path = home if os.access(home, os.X_OK) else None
        if not path:
            return None, ("%s not found (pip install iree-base-compiler "
                          "iree-base-runtime, or --iree-bin)" % name)
        tools.append(path)
    return tools, None


# ---------------------------------------------------------------------------
# kinac through ctypes.


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
        import numpy as np
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
                shape = [out.sizes[i] for i in range(out_rank)]
                n = int(np.prod(shape))
                buf = (ctypes.c_float * n).from_address(out.aligned +
                                                        4 * out.offset)
                res = np.ctypeslib.as_array(buf).copy().reshape(shape)
            free(out.allocated)
            return res
        return call


# Seconds to wait before each timing above one thread (file comment).
SETTLE_S = 0.0


# Warm-up and least timed seconds of each timing (timeit): a core that
# has idled (SETTLE_S, or the row before) runs the first milliseconds of
# work slowly (clock ramp, a virtual CPU rescheduled; measured on the
# 2-core Zen 5 VM, 2026-12-08: a 512 matmul at 2 threads took 0.9 ms a
# call for its first 5 calls, then 0.53, so the median of 7 calls after
# one warm-up call said 1.1), so every caller's calls are repeated for
# WARMUP_S before timing and timed for at least MIN_TIME_S, as
# iree-benchmark-module (Google Benchmark's min time) times IREE's.
WARMUP_S = 0.05
MIN_TIME_S = 0.2


def timeit(fn, repeats):
    """Median seconds of fn() over at least `repeats` calls and MIN_TIME_S,
    after WARMUP_S of untimed calls (at least one)."""
    if SETTLE_S:
        time.sleep(SETTLE_S)
    start = time.perf_counter()
    fn()
    while time.perf_counter() - start < WARMUP_S:
        fn()
    ts = []
    start = time.perf_counter()
    while len(ts) < repeats or time.perf_counter() - start < MIN_TIME_S:
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


def np_chain(np, x):
    a = x * np.float32(0.5)
    a += np.float32(1.0)
    np.abs(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    a *= x
    a -= np.float32(0.25)
    return np.tanh(a, out=a)


def np_math(np, x):
    b = np.abs(x)
    b += np.float32(1.0)
    s = np.sin(x)
    r = np.cos(x)
    r *= np.log(b)
    r += np.power(b, s)
    return r


def np_softmax(np, x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


def np_layer_norm(np, x, g, b, eps=1e-5):
    m = x.mean(axis=-1, keepdims=True)
    d = x - m
    v = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(v + np.float32(eps)) * g + b


def np_mlp(np, x, w1, b1, w2, b2):
    return np_softmax(np, np.maximum(x @ w1 + b1, 0) @ w2 + b2)


# ---------------------------------------------------------------------------
# The builds (in the parent: they do not depend on the thread count).


def build(args, tmp):
    """Compiles every program with kinac (per column) and IREE (per shape);
    returns the build description the workers read, with compile times."""
    out = {"kinac": {}, "iree": {}, "compile": []}
    columns = {"default": [], "native": ["--mcpu=native"]}
    for prog, src in PROGRAMS.items():
        path = os.path.join(tmp, prog + ".kir")
        if src is None:
            src = open(os.path.join(ROOT, "samples/digits/mlp.kir")).read()
        with open(path, "w") as fh:
            fh.write(src)
        cols = dict(columns)
        if tuned_flags(prog, args) is not None:
            cols["tuned"] = tuned_flags(prog, args)
        for col, flags in cols.items():
            so = os.path.join(tmp, "%s.%s.so" % (prog, col))
            cmd = [args.kinac, path, "--emit=shared", "-O" + args.opt,
                   "-o", so] + flags
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            out["compile"].append({"program": prog, "column": col,
                                   "tool": "kinac", "s":
                                   time.perf_counter() - t,
                                   "bytes": os.path.getsize(so)})
            out["kinac"].setdefault(prog, {})[col] = so
    tools, why = find_iree(args.iree_bin)
    out["iree_missing"] = why
    if tools:
        sources = {
            "matmul256": iree_matmul(256, 256, 256),
            "matmul512": iree_matmul(512, 512, 512),
            "matmul1024": iree_matmul(1024, 1024, 1024),
            "matmul2048": iree_matmul(2048, 2048, 2048),
            "matmul1797": iree_matmul(1797, 64, 32),
            "bmm": iree_matmul(1024, 64, 1024, batch=12),
            "chain": iree_chain(1 << 24),
            "math": iree_math(1 << 24),
            "softmax": iree_softmax(4096, 4096),
            "layer_norm": iree_layer_norm(4096, 4096),
            "mlp1": iree_mlp(1),
            "mlp1797": iree_mlp(1797),
        }
        for name, text in sources.items():
            src = os.path.join(tmp, "iree-%s.mlir" % name)
            vmfb = os.path.join(tmp, "iree-%s.vmfb" % name)
            with open(src, "w") as fh:
                fh.write(text)
            t = time.perf_counter()
            r = subprocess.run([tools[0], src, "-o", vmfb,
                                "--iree-hal-target-backends=llvm-cpu",
                                "--iree-llvmcpu-target-cpu=host"],
                               capture_output=True, text=True)
            if r.returncode:
                out["iree"][name] = {"error": "iree-compile failed: " +
                                     r.stderr.strip()[-300:]}
                continue
            out["compile"].append({"program": name, "column": "iree",
                                   "tool": "iree-compile",
                                   "s": time.perf_counter() - t,
                                   "bytes": os.path.getsize(vmfb)})
            out["iree"][name] = {"vmfb": vmfb}
        out["iree_benchmark"] = tools[1]
    return out


def iree_time(builds, name, inputs, threads, repeats, tmp):
    """Median seconds of iree-benchmark-module on `inputs` (arrays), or a
    string saying why there is none."""
    if builds.get("iree_missing"):
        return builds["iree_missing"]
    entry = builds["iree"].get(name, {})
    if "vmfb" not in entry:
        return entry.get("error", "not built")
    import numpy as np
    cmd = [builds["iree_benchmark"], "--module=" + entry["vmfb"],
           "--function=main", "--benchmark_format=json",
           "--benchmark_repetitions=%d" % repeats,
           "--benchmark_report_aggregates_only=true"]
    if threads == 1:
        cmd.append("--device=local-sync")
    else:
        cmd += ["--device=local-task",
                "--task_topology_group_count=%d" % threads]
    for i, a in enumerate(inputs):
        path = os.path.join(tmp, "in-%s-%d.npy" % (name, i))
        np.save(path, a)
        cmd.append("--input=@" + path)
    if SETTLE_S:
        time.sleep(SETTLE_S)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return "iree-benchmark-module failed: " + r.stderr.strip()[-300:]
    for bm in json.loads(r.stdout)["benchmarks"]:
        if bm.get("aggregate_name") == "median":
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
            return bm["real_time"] * scale[bm["time_unit"]]
    return "no median in iree-benchmark-module's output"


# ---------------------------------------------------------------------------
# One thread count (a subprocess: the libraries read their caps at load).


def worker(args):
    global SETTLE_S
    threads = args.worker
    SETTLE_S = 0.3 if threads > 1 else 0.0
    builds = json.load(open(args.builds))
    import numpy as np
    try:
        import torch
        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    rows = []
    tmp = os.path.dirname(args.builds)
    libs = {prog: {col: Kina(so) for col, so in cols.items()}
            for prog, cols in builds["kinac"].items()}

    def row(work, prog, inputs, out_rank, peers, ref, unit, amount,
            iree=None, memcpy=None):
        if args.rows and not re.search(args.rows, work):
            return
        r = {"work": work, "threads": threads, "unit": unit, "kinac": {},
             "peers": {}}
        for col, lib in libs[prog].items():
            call = lib.make(ENTRY.get(prog, prog), inputs, out_rank)
            out = call(keep=True)
            err = float(np.max(np.abs(out - ref) / np.maximum(1,
                                                             np.abs(ref))))
            s = timeit(call, args.repeats)
            r["kinac"][col] = {"s": s, "rate": amount / s / 1e9,
                               "max_rel_err_vs_numpy": err}
        for name, fn in peers.items():
            if isinstance(fn, str):
                r["peers"][name] = {"missing": fn}
                continue
            s = timeit(fn, args.repeats)
            r["peers"][name] = {"s": s, "rate": amount / s / 1e9}
        if iree is not None:
            s = iree_time(builds, iree, inputs, threads, args.repeats, tmp)
            r["peers"]["iree"] = ({"missing": s} if isinstance(s, str) else
                                  {"s": s, "rate": amount / s / 1e9})
        rates = [p["rate"] for p in r["peers"].values() if "rate" in p]
        if rates:
            r["best_peer_rate"] = max(rates)
            for col, k in r["kinac"].items():
                k["over_best_peer"] = k["rate"] / r["best_peer_rate"]
        if memcpy:
            for col, k in r["kinac"].items():
                k["of_memcpy"] = k["rate"] / memcpy
        rows.append(r)

    # memcpy of the bytes the memory-bound rows move (64 MiB in, 64 MiB out).
    n = 1 << 24
    src = rng.standard_normal(n).astype(np.float32)
    dst = np.empty_like(src)
    cps = {"numpy copyto": timeit(lambda: np.copyto(dst, src), args.repeats)}
    if torch:
        ts, td = torch.from_numpy(src), torch.from_numpy(dst)
        cps["torch copy_"] = timeit(lambda: td.copy_(ts), args.repeats)
    memcpy = max(2 * src.nbytes / s / 1e9 for s in cps.values())
    rows.append({"work": "memcpy 64 MiB", "threads": threads, "unit": "GB/s",
                 "memcpy_rate": memcpy,
                 "sources": {k: 2 * src.nbytes / s / 1e9
                             for k, s in cps.items()}})

    no_torch = "PyTorch not installed"
    x = rng.uniform(-3, 3, n).astype(np.float32)
    peers = {"numpy": lambda: np_chain(np, x), "torch": no_torch}
    if torch:
        tx = torch.from_numpy(x)
        peers["torch"] = lambda: torch.tanh(
            torch.exp(-torch.abs(tx * 0.5 + 1.0)) * tx - 0.25)
    row("chain 8 ops 2^24 f32", "chain", [x], 1, peers, np_chain(np, x),
        "GB/s", 2 * x.nbytes, "chain", memcpy)

    x = rng.uniform(-10, 10, n).astype(np.float32)
    peers = {"numpy": lambda: np_math(np, x), "torch": no_torch}
    if torch:
        tx = torch.from_numpy(x)

        def torch_math(tx=tx):
            b = torch.abs(tx) + 1.0
            return torch.cos(tx) * torch.log(b) + torch.pow(b, torch.sin(tx))
        peers["torch"] = torch_math
    row("math sin cos log pow 2^24 f32", "math", [x], 1, peers,
        np_math(np, x), "GB/s", 2 * x.nbytes, "math", memcpy)

    m = rng.standard_normal((4096, 4096)).astype(np.float32)
    peers = {"numpy": lambda: np_softmax(np, m), "torch": no_torch}
    if torch:
        tm = torch.from_numpy(m)
        peers["torch"] = lambda: torch.softmax(tm, -1)
    row("softmax [4096,4096] f32", "softmax", [m], 2, peers,
        np_softmax(np, m), "GB/s", 2 * m.nbytes, "softmax", memcpy)

    g = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    peers = {"numpy": lambda: np_layer_norm(np, m, g, b), "torch": no_torch}
    if torch:
        tg, tb = torch.from_numpy(g), torch.from_numpy(b)
        peers["torch"] = lambda: torch.nn.functional.layer_norm(
            tm, (4096,), tg, tb, 1e-5)
    row("layer_norm [4096,4096] f32", "layer_norm", [m, g, b], 2, peers,
        np_layer_norm(np, m, g, b), "GB/s", 2 * m.nbytes, "layer_norm",
        memcpy)

    sgemm = openblas()
    shapes = [("matmul 256 f32", 256, 256, 256, None, "matmul256"),
              ("matmul 512 f32", 512, 512, 512, None, "matmul512"),
              ("matmul 1024 f32", 1024, 1024, 1024, None, "matmul1024"),
              ("matmul 2048 f32", 2048, 2048, 2048, None, "matmul2048"),
              ("matmul [1797,64]x[64,32]", 1797, 64, 32, None, "matmul1797"),
              ("matmul [12,1024,64]x[12,64,1024]", 1024, 64, 1024, 12,
               "bmm")]
    for work, mm, kk, nn, batch, iree in shapes:
        lead = [batch] if batch else []
        a = rng.standard_normal(lead + [mm, kk]).astype(np.float32)
        bb = rng.standard_normal(lead + [kk, nn]).astype(np.float32)
        c = np.empty(lead + [mm, nn], np.float32)
        peers = {"openblas": "libopenblas not found (KINA_WITH_BENCH=1 "
                 "scripts/install-deps.sh)", "numpy": lambda: a @ bb,
                 "torch": no_torch}
        if torch:
            ta, tbb = torch.from_numpy(a), torch.from_numpy(bb)
            peers["torch"] = lambda: ta @ tbb
        if sgemm:
            def blas(a=a, bb=bb, c=c, mm=mm, kk=kk, nn=nn, nb=batch or 1):
                sa, sb, sc = mm * kk * 4, kk * nn * 4, mm * nn * 4
                for i in range(nb):
                    sgemm(101, 111, 111, mm, nn, kk, 1.0,
                          a.ctypes.data + i * sa, kk,
                          bb.ctypes.data + i * sb, nn, 0.0,
                          c.ctypes.data + i * sc, nn)
            peers["openblas"] = blas
        row(work, "bmm" if batch else "matmul", [a, bb], 3 if batch else 2,
            peers, a @ bb, "GFLOP/s", 2 * (batch or 1) * mm * kk * nn, iree)

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
        peers = {"numpy": lambda: np_mlp(np, *ws), "torch": no_torch}
        if torch:
            tw = [torch.from_numpy(w) for w in ws]
            peers["torch"] = lambda: torch.softmax(torch.relu(
                tw[0] @ tw[1] + tw[2]) @ tw[3] + tw[4], -1)
        row("digits MLP batch %d" % batch, "mlp", ws, 2, peers,
            np_mlp(np, *ws), "GFLOP/s", 2 * batch * (64 * 32 + 32 * 10),
            "mlp%d" % batch)
    with open(args.out, "w") as fh:
        json.dump(rows, fh)


# ---------------------------------------------------------------------------


def print_table(report):
    cols = ["default", "native", "tuned"]
    print("kinac columns: default processor (multiversioned), --mcpu=native, "
          "--autotune (with --tuned); x/best = kinac rate / best peer rate (>1: kinac "
          "faster); %memcpy = kinac GB/s / memcpy GB/s")
    for c in report["compile"]:
        print("compile %-12s %-8s %8.2f s %9d bytes" % (
            c["program"], c["column"], c["s"], c["bytes"]))
    head = "%-34s %3s" % ("work", "thr")
    for c in cols:
        head += " | %-26s" % ("kinac " + c + " ms rate x/best")
    print(head + " | peers: ms rate")
    for r in report["rows"]:
        if "memcpy_rate" in r:
            print("%-34s %3d | memcpy %.1f GB/s (%s)" % (
                r["work"], r["threads"], r["memcpy_rate"], ", ".join(
                    "%s %.1f" % kv for kv in r["sources"].items())))
            continue
        line = "%-34s %3d" % (r["work"], r["threads"])
        for c in cols:
            k = r["kinac"].get(c)
            if not k:
                line += " | %-26s" % "-"
                continue
            cell = "%8.3f %7.1f %s" % (1e3 * k["s"], k["rate"],
                                       "%.2f" % k["over_best_peer"]
                                       if "over_best_peer" in k else "n/a")
            if "of_memcpy" in k:
                cell += " %3.0f%%" % (100 * k["of_memcpy"])
            line += " | %-26s" % cell
        peers = []
        for name, p in r["peers"].items():
            peers.append("%s %.3f %.1f" % (name, 1e3 * p["s"], p["rate"])
                         if "s" in p else "%s: %s" % (name, p["missing"]))
        print(line + " | " + "; ".join(peers) + " " + r["unit"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinac", default=os.path.join(ROOT, "build/bin/kinac"))
    ap.add_argument("-O", dest="opt", default="2")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", default="1,all",
                    help="thread counts, comma-separated; `all` is every "
                    "CPU (default 1,all)")
    ap.add_argument("--iree-bin", default="",
                    help="folder of iree-compile and iree-benchmark-module "
                    "(default: PATH, then ~/.pyenv/shims)")
    ap.add_argument("--json", default=os.path.join(
        ROOT, "bench/cpu/results-%s.json" % datetime.date.today()))
    ap.add_argument("--tuned", action="store_true",
                    help="add the `tuned` column: the matmul, softmax and "
                    "layer_norm programs built "
                    "with kinac --autotune (docs/autotune.md)")
    ap.add_argument("--tuning-cache", default="bench-cpu-tuning.json",
                    help="tuning cache of the tuned column (kept; a second "
                    "run reuses it)")
    ap.add_argument("--autotune-budget", type=float, default=60,
                    help="seconds of search per tuned program (default 60)")
    ap.add_argument("--rows", default="",
                    help="run only the rows whose work (first column) "
                    "matches this Python regular expression (re.search), "
                    "e.g. 'batch|MLP'; memcpy always runs")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--builds", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    counts = []
    for t in args.threads.split(","):
        n = os.cpu_count() if t == "all" else int(t)
        if n not in counts:
            counts.append(n)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "opt": args.opt,
              "repeats": args.repeats, "command": " ".join(sys.argv),
              "load_average_start": os.getloadavg(), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        builds = build(args, tmp)
        report["compile"] = builds["compile"]
        report["iree_missing"] = builds.get("iree_missing")
        bpath = os.path.join(tmp, "builds.json")
        with open(bpath, "w") as fh:
            json.dump(builds, fh)
        for n in counts:
            env = dict(os.environ)
            for var in ("KINA_NUM_THREADS", "OMP_NUM_THREADS",
                        "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = str(n)
            out = os.path.join(tmp, "rows-%d.json" % n)
            subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--worker", str(n), "--builds", bpath, "--out",
                            out, "--repeats", str(args.repeats), "--rows",
                            args.rows], env=env,
                           check=True)
            report["rows"] += json.load(open(out))
    report["load_average_end"] = os.getloadavg()
    print_table(report)
    with open(args.json, "w") as fh:
        json.dump(report, fh, indent=1)
    print("wrote", args.json, "; load average", os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
