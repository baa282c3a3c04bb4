"""Per-call time of two builds of the probe's libraries in ONE process.

    python3 bench/gpu/probe/ab.py DIR_A DIR_B

DIR_A and DIR_B each hold probe.so and mlp.so (built as probe.py's
docstring says; each links its own copy of libkina_runtime.a, e.g. before
and after a runtime change). Times `e1`, `mm` and `forward` as
bench.py's Kernel.timed calls them (the call, its synchronisation and
runtime_free), and torch.add + synchronise, in alternating blocks of 100
calls (20 blocks each, the order reversed every other block, after 50
warm-up calls), so the drift of the GPU's clock and of the machine hits
every build alike; separate processes differ by several microseconds
(docs/performance.md, 2026-12-05). Prints the median and 10th percentile
per build and case.
"""
import ctypes, os, statistics, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
import bench as B

if len(sys.argv) != 3:
    sys.exit("usage: ab.py DIR_A DIR_B (each with probe.so and mlp.so)")
N = 1797
g = torch.Generator(device="cuda"); g.manual_seed(1)
def r(*s): return B.randn(s, torch.float32, 1.0, g)
libs = {d: (ctypes.CDLL(os.path.join(d, "probe.so")),
            ctypes.CDLL(os.path.join(d, "mlp.so"))) for d in sys.argv[1:]}
cases = [("e1", 0, 2, [r(N, 10)]), ("mm", 0, 2, [r(N, 64), r(64, 32)]),
         ("forward", 1, 2, [r(N, 64), r(64, 32), r(32), r(32, 10), r(10)])]
x = r(N, 10)
def torch_add(): torch.add(x, 1.0); torch.cuda.synchronize()
for name, which, rank, args in cases:
    runs = {d: B.Kernel(libs[d][which], name, rank).timed(args) for d in libs}
    runs["torch add+sync"] = torch_add
    times = {v: [] for v in runs}
    for fn in runs.values():
        for _ in range(50): fn()
    order = list(runs)
    for block in range(20):
        for v in (order if block % 2 == 0 else order[::-1]):
            fn = runs[v]
            for _ in range(100):
                t0 = time.perf_counter(); fn(); times[v].append(time.perf_counter() - t0)
    print("%-8s " % name + " | ".join(
        "%s median %.2f p10 %.2f us" % (v, statistics.median(t) * 1e6,
                                      sorted(t)[len(t) // 10] * 1e6)
        for v, t in times.items()), flush=True)
