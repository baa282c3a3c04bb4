#!/usr/bin/python3
"""Measures the error of kinac's f32 math functions against float64.

For each unary function (exp log tanh sigmoid erf gelu gelu_tanh sin cos
sqrt rsqrt) it compiles one Kina function `f32[N] -> f32[N]` with
`kinac --emit=shared` at -O0 (libm calls) and at -O2 (MLIR's polynomial
approximations where kina-math-approximation applies them: a --mcpu with
FMA; the default here is native), runs it with
`kina-run` on the same sample and compares with a float64 reference
(NumPy; PyTorch's float64 erf for erf and gelu). The sample covers the
whole f32 range: every special value (+-0, +-inf, NaN, the smallest and
largest denormal and normal numbers), 2^20 uniformly random bit patterns
(so every binade, denormals and NaNs included), 2^20 uniform values in
[-20, 20] and 2^16 random denormals.

Reports per function and level: max ULP error (|out - ref| over the
spacing of f32 at the rounded reference), the tolerance metric of
docs/tolerances.md (max |out - ref| / max(1, |ref|), f32 tolerance 1e-5)
and the count of special-value mismatches (NaN where the reference is not,
or the reverse; a wrong infinity). Prints a table, writes JSON with
--json. Usage: bench/cpu/math_ulp.py [--kinac K] [--kina-run R] [--mcpu CPU]
                             [--json F]
"""
import argparse, json, os, subprocess, sys, tempfile
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FUNCS = {
    "exp": ("exp %x", lambda x: np.exp(x)),
    "log": ("log %x", lambda x: np.log(x)),
    "tanh": ("tanh %x", lambda x: np.tanh(x)),
    "sigmoid": ("sigmoid %x", lambda x: 1.0 / (1.0 + np.exp(-x))),
    "erf": ("erf %x", None),
    "gelu": ("gelu %x", None),
    "gelu_tanh": ('gelu %x {approximate = "tanh"}',
                  lambda x: 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) *
                                                     (x + 0.044715 * x ** 3)))),
    "sin": ("sin %x", lambda x: np.sin(x)),
    "cos": ("cos %x", lambda x: np.cos(x)),
    "sqrt": ("sqrt %x", lambda x: np.sqrt(x)),
    "rsqrt": ("rsqrt %x", lambda x: 1.0 / np.sqrt(x)),
}


def erf64(x):
    import torch
    return torch.special.erf(torch.from_numpy(x)).numpy()


def reference(name, x64):
    with np.errstate(all="ignore"):
        if name == "erf":
            return erf64(x64)
        if name == "gelu":
            return 0.5 * x64 * (1.0 + erf64(x64 / np.sqrt(2.0)))
        return FUNCS[name][1](x64)


def sample(seed=1):
    rng = np.random.default_rng(seed)
    f = np.finfo(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, f.tiny, -f.tiny,
                        f.max, -f.max, f.smallest_subnormal,
                        -f.smallest_subnormal, 1.0, -1.0], dtype=np.float32)
    bits = rng.integers(0, 2 ** 32, size=1 << 20, dtype=np.uint64)
    anybits = bits.astype(np.uint32).view(np.float32)
    uniform = rng.uniform(-20, 20, size=1 << 20).astype(np.float32)
    den = (rng.integers(1, 1 << 23, size=1 << 16, dtype=np.uint64)
           .astype(np.uint32) | (rng.integers(0, 2, size=1 << 16,
                                               dtype=np.uint64)
                                  .astype(np.uint32) << 31)).view(np.float32)
    return np.concatenate([special, anybits, uniform, den])


def measure(out, x):
    ref = reference_cache[id(x)]
    with np.errstate(all="ignore"):
        r32 = ref.astype(np.float32)
        nan_ref, nan_out = np.isnan(ref), np.isnan(out)
        bad = int(np.count_nonzero(nan_ref != nan_out))
        inf_ref = np.isinf(r32)
        bad += int(np.count_nonzero(inf_ref & (out != r32) & ~nan_ref))
        fin = ~nan_ref & ~nan_out & ~inf_ref & np.isfinite(out)
        bad += int(np.count_nonzero(~nan_ref & ~inf_ref & ~np.isfinite(out)))
        o, r = out[fin].astype(np.float64), ref[fin]
        err = np.abs(o - r)
        ulp = np.spacing(np.abs(r32[fin])).astype(np.float64)
        ulps = err / ulp
        tol = err / np.maximum(1.0, np.abs(r))
    normal = np.abs(r32[fin]) >= np.finfo(np.float32).tiny
    i = int(np.argmax(ulps)) if ulps.size else 0
    return {"max_ulp": float(ulps.max()) if ulps.size else 0.0,
            "max_ulp_normal": float(ulps[normal].max()) if normal.any()
            else 0.0,
            "worst_x": float(x[fin][i]) if ulps.size else None,
            "max_tol_metric": float(tol.max()) if tol.size else 0.0,
            "special_mismatches": bad}


reference_cache = {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinac", default=os.path.join(ROOT, "build/bin/kinac"))
    ap.add_argument("--kina-run", dest="kina_run",
                    default=os.path.join(ROOT, "build/bin/kina-run"))
    ap.add_argument("--mcpu", default="native")
    ap.add_argument("--json")
    ap.add_argument("--levels", default="0,2")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    x = sample()
    names = [n for n in FUNCS if not args.only or n in args.only.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "m.kir")
        with open(src, "w") as fh:
            fh.write("module @ulp\n\n")
            for n in names:
                fh.write("func @%s(%%x: f32[N]) -> f32[N] {\n  %%r = %s\n"
                         "  return %%r\n}\n\n" % (n, FUNCS[n][0]))
        xin = os.path.join(tmp, "x.npy")
        np.save(xin, x)
        for lvl in args.levels.split(","):
            lib = os.path.join(tmp, "m%s.so" % lvl)
            subprocess.run([args.kinac, src, "--emit=shared", "-O" + lvl,
                            "-o", lib] + (["--mcpu=" + args.mcpu] if args.mcpu else []),
                           check=True)
            for n in names:
                key = id(x)
                with np.errstate(all="ignore"):
                    reference_cache[key] = reference(n, x.astype(np.float64))
                out = os.path.join(tmp, "o.npy")
                subprocess.run([args.kina_run, lib, n, "--in", xin, "--out",
                                out], check=True)
                results.setdefault(n, {})["O" + lvl] = measure(np.load(out), x)
    print("%-10s %6s %12s %12s %14s %9s %14s" % (
        "function", "level", "max ulp", "ulp normal", "max tol metric",
        "specials", "worst x"))
    for n, per in results.items():
        for lvl, m in per.items():
            ok = "ok" if (m["max_tol_metric"] <= 1e-5 and
                          m["special_mismatches"] == 0) else "MISS"
            print("%-10s %6s %12.3g %12.1f %14.3g %9d %14.7g %s" % (
                n, lvl, m["max_ulp"], m["max_ulp_normal"], m["max_tol_metric"],
                m["special_mismatches"], m["worst_x"] or 0.0, ok))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"samples": int(x.size), "results": results}, fh,
                      indent=1)


if __name__ == "__main__":
    sys.exit(main())
