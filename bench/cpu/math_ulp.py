#!/usr/bin/python3
"""Measures the error of kinac's f32 math functions against float64.

For each function (exp log tanh sigmoid erf gelu gelu_tanh sin cos pow
sqrt rsqrt; pow's exponents from `exponents`) it compiles one Kina
function `f32[N] -> f32[N]` with `kinac --emit=shared` at -O0 (libm
calls) and at -O2 (MLIR's polynomial approximations where
kina-math-approximation applies them: a --mcpu with FMA; glibc's libmvec
for sin, cos, log, pow; --mcpu default native, '' for the multiversioned
object), runs it with
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
    "pow": ("pow %x, %y", lambda x, y: np.power(x, y)),
    "sqrt": ("sqrt %x", lambda x: np.sqrt(x)),
    "rsqrt": ("rsqrt %x", lambda x: 1.0 / np.sqrt(x)),
}


def erf64(x):
    import torch
    return torch.special.erf(torch.from_numpy(x)).numpy()


def signaling_nan(a):
    """Where the f32 array `a` holds a signaling NaN (quiet bit clear)."""
    b = a.view(np.uint32)
    return (((b & 0x7f800000) == 0x7f800000) & ((b & 0x007fffff) != 0) &
            ((b & 0x00400000) == 0))


def reference(name, x64, y64=None, x32=None, y32=None):
    with np.errstate(all="ignore"):
        if y64 is not None:
            # C's pow(x, 0) = 1 and pow(1, y) = 1 hold for quiet NaNs; an
            # operand that is a signaling NaN (the random bit patterns hold
            # them; the float64 conversion would quieten it) gives NaN, as
            # IEEE 754 and glibc's powf do.
            r = FUNCS[name][1](x64, y64)
            return np.where(signaling_nan(x32) | signaling_nan(y32), np.nan,
                            r)
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


def exponents(x, seed=2):
    """pow's second operand for the sample x: per element, one of uniform
    values in [-8, 8], small integers (negative bases), large magnitudes
    (overflow and underflow), and the special values."""
    rng = np.random.default_rng(seed)
    n = x.size
    f = np.finfo(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, np.inf,
                        -np.inf, np.nan, f.max, -f.max, f.tiny,
                        f.smallest_subnormal], dtype=np.float32)
    kind = rng.integers(0, 4, size=n)
    y = np.where(kind == 0, rng.uniform(-8, 8, size=n),
        np.where(kind == 1, rng.integers(-10, 11, size=n),
        np.where(kind == 2, rng.uniform(-200, 200, size=n),
                 special[rng.integers(0, special.size, size=n)])))
    return y.astype(np.float32)


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
                params = "%x: f32[N], %y: f32[N]" if "%y" in FUNCS[n][0] \
                    else "%x: f32[N]"
                fh.write("func @%s(%s) -> f32[N] {\n  %%r = %s\n"
                         "  return %%r\n}\n\n" % (n, params, FUNCS[n][0]))
        xin = os.path.join(tmp, "x.npy")
        np.save(xin, x)
        y = exponents(x)
        yin = os.path.join(tmp, "y.npy")
        np.save(yin, y)
        for lvl in args.levels.split(","):
            lib = os.path.join(tmp, "m%s.so" % lvl)
            subprocess.run([args.kinac, src, "--emit=shared", "-O" + lvl,
                            "-o", lib] + (["--mcpu=" + args.mcpu] if args.mcpu else []),
                           check=True)
            for n in names:
                key = id(x)
                binary = "%y" in FUNCS[n][0]
                with np.errstate(all="ignore"):
                    reference_cache[key] = reference(
                        n, x.astype(np.float64),
                        y.astype(np.float64) if binary else None, x, y)
                out = os.path.join(tmp, "o.npy")
                subprocess.run([args.kina_run, lib, n, "--in", xin] +
                               (["--in", yin] if binary else []) +
                               ["--out", out], check=True)
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
