"""Per-call cost of kinac's cuda entries: where a small call's time goes.

Build on the development machine (no GPU needed):
    kinac bench/gpu/probe/probe.kir --target=cuda --emit=shared -O2 -o DIR/probe.so
    kinac samples/digits/mlp.kir --target=cuda --emit=shared -O2 -o DIR/mlp.so
Run on the GPU machine (PyTorch with CUDA):
    python3 bench/gpu/probe/probe.py DIR
Prints the median wall time of one call of each function (the call, its
stream synchronisation and the result's runtime_free, as bench.py times
a call; 2000 calls after 50 warm-up ones), the same for torch.add with a
synchronisation, a synchronisation alone and a trivial ctypes call (the
floors), then torch.profiler's table of the kernels of 3 MLP calls.
docs/performance.md, "where the digits MLP's 72 us go", has a run.
"""
import ctypes, os, statistics, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
import bench as B

if len(sys.argv) != 2:
    sys.exit("usage: probe.py LIBDIR (with probe.so and mlp.so)")
here = sys.argv[1]
N = 1797
g = torch.Generator(device="cuda"); g.manual_seed(1)
def r(*s): return B.randn(s, torch.float32, 1.0, g)

def med(fn, reps=2000):
    for _ in range(50): fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6

probe = ctypes.CDLL(os.path.join(here, "probe.so"))
mlp = ctypes.CDLL(os.path.join(here, "mlp.so"))
cases = [("e1", probe, 2, [r(N, 10)]), ("e2", probe, 2, [r(N, 10), r(N, 10)]),
         ("mm", probe, 2, [r(N, 64), r(64, 32)]),
         ("mmb", probe, 2, [r(N, 64), r(64, 32), r(32)]),
         ("sm", probe, 2, [r(N, 10)]), ("rs", probe, 1, [r(N, 10)]),
         ("forward", mlp, 2, [r(N, 64), r(64, 32), r(32), r(32, 10), r(10)])]
for name, lib, rank, args in cases:
    k = B.Kernel(lib, name, rank)
    print("%-8s kinac %7.1f us" % (name, med(k.timed(args))), flush=True)
# the floor: torch launch + sync, ctypes call
x = r(N, 10)
def t1(): torch.add(x, 1.0); torch.cuda.synchronize()
print("torch add+sync      %7.1f us" % med(t1))
def t0(): torch.cuda.synchronize()
print("torch sync alone    %7.1f us" % med(t0))
f = probe.kina_last_error
print("ctypes trivial call %7.1f us" % med(lambda: f()))
# profile of kernels in one forward call
from torch.profiler import profile, ProfilerActivity
k = B.Kernel(mlp, "forward", 2); run = k.timed(cases[-1][3])
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    for _ in range(3): run()
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=25))
