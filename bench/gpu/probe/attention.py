"""kina-gpu-map-attention on the GPU: bench/gpu/probe/attention.kir's three
functions against PyTorch (the spec's roundings in float32 math, and float64
without them) on 16-byte aligned tensors (the vector kernel) and on views
2 bytes off (its scalar twin); then the causal [8, 12, 1024, 64] bf16 call,
timed as a user times it (call, synchronisation, runtime_free; median),
against F.scaled_dot_product_attention(is_causal=True) and the same
attention written out in eager PyTorch, in the same process.

    python3 bench/gpu/probe/attention.py LIBDIR     (LIBDIR/attention.so from
                                                     bench/gpu/build.sh)

A result passes when its NaNs are the reference's, it is finite, and its
largest error against float64 is at most twice the spec-rounded
reference's plus 1e-3. Exit status 1 when any check fails."""
import ctypes, os, sys, time, statistics
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench as B

libdir = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False

def spec_ref(q, kt, v, scale, mask):
    dt = q.dtype
    s = (q.float() @ kt.float()).to(dt)
    if scale is not None:
        s = (s.float() * scale).to(dt)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(dt)
    return (p.float() @ v.float()).to(dt)

def f64_ref(q, kt, v, scale, mask):
    s = q.double() @ kt.double()
    if scale is not None:
        s = s * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v.double()

def misaligned(t):
    flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    view = flat[1:].view(t.shape)
    view.copy_(t)
    return view

fails = 0
def check(name, lib, fn, shapes, dt, scale, maskfn):
    global fails
    q = torch.randn(shapes[0], device="cuda").to(dt)
    kt = torch.randn(shapes[1], device="cuda").to(dt)
    v = torch.randn(shapes[2], device="cuda").to(dt)
    M, N = shapes[0][-2], shapes[1][-1]
    mask = maskfn(M, N) if maskfn else None
    k = B.Kernel(lib, fn, len(shapes[0]))
    for variant in ("aligned", "misaligned"):
        args = [q, kt, v] if variant == "aligned" else [misaligned(x) for x in (q, kt, v)]
        got = k.result(args, dt)
        ref = spec_ref(q, kt, v, scale, mask)
        exact = f64_ref(q, kt, v, scale, mask)
        e_got = (got.double() - exact).abs().max().item()
        e_ref = (ref.double() - exact).abs().max().item()
        nan_ok = torch.equal(torch.isnan(got), torch.isnan(ref))
        ok = nan_ok and torch.isfinite(got).all().item() and e_got <= 2 * e_ref + 1e-3
        print("%s %-28s %-10s max|kinac-f64| %.3e  max|spec-f64| %.3e  max|kinac-spec| %.3e" % (
            "PASS" if ok else "FAIL", name, variant, e_got, e_ref,
            (got.double() - ref.double()).abs().max().item()))
        fails += 0 if ok else 1

causal = lambda M, N: torch.ones(M, N, dtype=torch.bool, device="cuda").tril()
anti = lambda M, N: torch.ones(M, N, dtype=torch.bool, device="cuda").triu()
big = small = ctypes.CDLL(os.path.join(libdir, "attention.so"))
check("causal bf16 [8,12,1024,64]", big, "causal", [(8,12,1024,64), (8,12,64,1024), (8,12,1024,64)], torch.bfloat16, 0.125, causal)
check("anti-causal bf16 [1,2,128,64]", small, "anti", [(1,2,128,64), (1,2,64,128), (1,2,128,64)], torch.bfloat16, 0.125, anti)
check("plain f16 [3,128,32]x[3,32,192]", small, "plain", [(3,128,32), (3,32,192), (3,192,64)], torch.float16, None, None)

# time: the causal call as a user times it, against sdpa and the written-out eager
q = torch.randn(8,12,1024,64, device="cuda").to(torch.bfloat16)
kk = torch.randn(8,12,1024,64, device="cuda").to(torch.bfloat16)
v = torch.randn(8,12,1024,64, device="cuda").to(torch.bfloat16)
kt = kk.transpose(-1,-2).contiguous()
k = B.Kernel(big, "causal", 4)
t_k, n = B.median_time(k.timed([q, kt, v]), 20, 20, 2000, 1.0)
mask = causal(1024, 1024)
def eager():
    s = (q @ kt) * 0.125
    s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v
t_s, _ = B.median_time(B.synced(lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=True), ()), 20, 20, 2000, 1.0)
t_e, _ = B.median_time(B.synced(eager, ()), 20, 20, 2000, 1.0)
print("device", torch.cuda.get_device_name())
print("attention causal bf16 [8,12,1024,64]: kinac %.3f ms (%d reps), sdpa %.3f ms, eager written out %.3f ms" % (t_k*1e3, n, t_s*1e3, t_e*1e3))
print("FAILS", fails)
sys.exit(1 if fails else 0)
