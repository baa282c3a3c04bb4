#!/usr/bin/python3
"""Generates the Kina IR conformance cases under tests/conformance/cases/.

Each case is a folder `cases/<name>/` holding `case.kir` (one exported
function `@<name>`, sometimes with a private helper), its inputs `in<k>.npy`,
the expected outputs `out<k>.npy` and `case.json` (the function, the
expected outcome: outputs, a run-time status 1 or 6 with a message, or a
located compile error; the tolerance class of each output; the seed of its
inputs; the oracle that computed the outputs). Inputs are random, drawn
fresh for every case from `numpy.random.default_rng(seed)` with the seed
recorded in case.json (never all zeros), plus edge values (NaN, +-inf, -0.0,
subnormals, the largest finite values, 1e4 magnitudes, integer bounds).
Expected outputs follow the language reference (docs/language.md, "Operations"):
float results are computed in float64 from the exact input values and then
rounded once to the result type (kina_values.round_float, to nearest, ties
to even); integer results with Python integers, wrapped to the type. The
oracle is NumPy in float64 (math.erf for erf); PyTorch (Debian's
python3-torch 1.13) in float64 is a second oracle for the ops it has (erf,
gelu, softmax, log_softmax, layer_norm): the generator stops when the two
disagree. rms_norm has no PyTorch 1.13 op and uses the NumPy formula alone.
docs/tolerances.md says how outputs are compared. The cases are committed;
CI only runs them (run_conformance.py, NumPy alone). Running this script
again rewrites cases/ byte for byte (fixed seeds, deterministic NPY and
sorted JSON); `--check` regenerates into a temporary folder and compares.
Run with /usr/bin/python3 (python3-numpy, python3-torch).
"""

import argparse
import filecmp
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
import zlib

# NumPy (1.24) computes f64 exp, log, sin, cos, ... with its own AVX-512
# kernels where the CPU has them, which differ from glibc's libm in the last
# bit: the cases were generated without them, so turn them off (before NumPy
# is imported) to regenerate the same bytes on every machine.
_NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL"
if os.environ.get("NPY_DISABLE_CPU_FEATURES") != _NO_AVX512:
    os.environ["NPY_DISABLE_CPU_FEATURES"] = _NO_AVX512
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kina_values import (DTYPES, FLOAT_FORMAT, FLOATS, INTS, NPY,  # noqa
                         float_max, float_min_normal, float_min_subnormal,
                         int_range, is_float, round_float,
                         round_int_to_float, to_storage, wrap)

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # checked in main(): regenerating needs PyTorch
    torch = None

BASE_SEED = 20240603
NUMERIC = FLOATS + INTS  # everything but i1
NAN, INF = float("nan"), float("inf")


# --- Cases -------------------------------------------------------------------


def seed_of(name):
    """The recorded seed of a case: fixed, and different for every name."""
    return BASE_SEED + zlib.crc32(name.encode()) % 1000003


def rng_of(name):
    return np.random.default_rng(seed_of(name))


def ty(dt, dims):
    """Kina type text: `f32[3, ?]`, `f32[]` for rank 0."""
    return f"{dt}[{', '.join(str(d) for d in dims)}]"


class Suite:
    """Collects the cases and writes them."""

    def __init__(self):
        self.cases = {}

    def add(self, name, *, op, dtype, params, results, body, inputs,
            outputs=None, status=0, message=None, compile_error=None,
            oracle="numpy-float64", tolerance=None, input_dtypes=None,
            helper=None, group=None, note=None):
        """Adds case `name`.

        params: [(name, element type, dims)]; results: [(element type,
        dims)]; body: statement lines, the last one `return ...`; inputs:
        value arrays in parameter order (float64 / int64 / bool); outputs:
        value arrays (status 0). status: 1 or 6 for an expected run-time
        failure with `message` (a text, or a list of texts, that kina-run's
        error output must contain); compile_error: (body line index,
        message texts) for a case that kinac must reject at that line.
        tolerance: per-output tolerance class (default: the element type;
        "exact" for value-selecting ops). input_dtypes
        overrides the element types the input files are written with
        (status 6 cases). helper: text of a private function placed before
        the exported one."""
        assert name not in self.cases, name
        assert name.isidentifier() and name[0].isalpha(), name
        sig = ", ".join(f"%{p}: {ty(dt, dims)}" for p, dt, dims in params)
        res = [ty(dt, dims) for dt, dims in results]
        res_text = res[0] if len(res) == 1 else "(" + ", ".join(res) + ")"
        lines = []
        if helper:
            lines += helper.rstrip("\n").split("\n") + [""]
        first_body_line = len(lines) + 2
        lines.append(f"func @{name}({sig}) -> {res_text} {{")
        lines += ["  " + s for s in body]
        lines.append("}")
        kir = "\n".join(lines) + "\n"

        files_in = []
        in_dts = input_dtypes or [dt for _, dt, _ in params]
        assert compile_error or len(inputs) == len(params), name
        for k, (vals, dt) in enumerate(zip(inputs, in_dts)):
            arr = to_storage(vals, dt)
            if arr.size and not np.any(np.asarray(vals) != 0):
                raise ValueError(f"{name}: input {k} is all zeros")
            files_in.append((f"in{k}.npy", arr, dt))
        files_out = []
        expect = {"status": status}
        if compile_error is not None:
            index, text = compile_error
            expect = {"compile_error": True, "line": first_body_line + index,
                      "message": [text] if isinstance(text, str) else
                      list(text)}
        elif status == 0:
            assert outputs is not None and len(outputs) == len(results), name
            if isinstance(tolerance, str) or tolerance is None:
                tolerance = [tolerance] * len(results)
            for k, ((dt, _), vals) in enumerate(zip(results, outputs)):
                tol = tolerance[k] or (dt if is_float(dt) else "exact")
                files_out.append((f"out{k}.npy", to_storage(vals, dt), dt,
                                  tol))
        else:
            expect["message"] = [message] if isinstance(message, str) \
                else list(message)
        meta = {
            "name": name,
            "function": name,
            "op": op,
            "dtype": dtype,
            "group": group or f"{op}_{dtype}",
            "seed": seed_of(name),
            "oracle": oracle,
            "expect": expect,
            "inputs": [{"file": f, "dtype": dt} for f, _, dt in files_in],
            "outputs": [{"file": f, "dtype": dt, "tolerance": tol}
                        for f, _, dt, tol in files_out],
            "results": len(results),
        }
        if note:
            meta["note"] = note
        self.cases[name] = (kir, files_in, files_out, meta)

    def write(self, root):
        if os.path.isdir(root):
            shutil.rmtree(root)
        os.makedirs(root)
        for name in sorted(self.cases):
            kir, files_in, files_out, meta = self.cases[name]
            d = os.path.join(root, name)
            os.makedirs(d)
            with open(os.path.join(d, "case.kir"), "w") as f:
                f.write(kir)
            for fname, arr, *_ in files_in + files_out:
                np.save(os.path.join(d, fname), arr, allow_pickle=False)
            with open(os.path.join(d, "case.json"), "w") as f:
                json.dump(meta, f, indent=1, sort_keys=True)
                f.write("\n")


S = Suite()


# --- Random and edge values --------------------------------------------------


def nonzero(make):
    """Calls make() until it gives an array that is not all zeros."""
    for _ in range(100):
        v = make()
        if v.size == 0 or np.any(v != 0):
            return v
    raise RuntimeError("could not draw a non-zero array")


def rand(rng, dt, shape, lo=-4.0, hi=4.0):
    """Random values of `dt`: floats uniform in [lo, hi) rounded to dt,
    integers uniform in [lo, hi] (clipped to the type), i1 fair coins."""
    shape = tuple(shape)
    if is_float(dt):
        return nonzero(lambda: round_float(rng.uniform(lo, hi, shape), dt))
    if dt == "i1":
        return nonzero(lambda: rng.random(shape) < 0.5)
    tlo, thi = int_range(dt)
    lo, hi = max(int(lo), tlo), min(int(hi), thi)
    return nonzero(lambda: np.array(
        [int(v) for v in rng.integers(lo, hi, size=shape, endpoint=True,
                                      dtype=np.int64).ravel()],
        dtype=np.int64).reshape(shape))


def rand_full(rng, dt, shape):
    """Integers over the whole range of `dt` (to exercise wrapping)."""
    lo, hi = int_range(dt)
    return rand(rng, dt, shape, lo, hi)


def rand_away(rng, dt, shape, lo, hi):
    """Floats with lo <= |x| < hi and a random sign."""
    mag = rng.uniform(lo, hi, shape)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return round_float(mag * sign, dt)


def float_edges(dt):
    """NaN, infinities, signed zeros, subnormals, the extremes, 1e4 and a
    few ordinary values, exact in `dt`."""
    tiny = float_min_subnormal(dt)
    vals = [NAN, INF, -INF, 0.0, -0.0, tiny, -3 * tiny, float_min_normal(dt),
            1e4, -1e4, float_max(dt), -float_max(dt), 0.5, -1.5, 2.5, 3.75]
    return round_float(np.array(vals), dt)


def int_edges(dt):
    lo, hi = int_range(dt)
    return np.array([lo, lo + 1, -7, -2, -1, 0, 1, 2, 7, hi - 1, hi],
                    dtype=np.int64)


# --- Reference semantics -----------------------------------------------------


def fcall(f, *args, **kwargs):
    with np.errstate(all="ignore"):
        return f(*args, **kwargs)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def check_close(name, a, b, tol=1e-12):
    """The second oracle (PyTorch) must agree with the first (NumPy)."""
    a, b = np.asarray(a), np.asarray(b)
    ok = (np.isnan(a) == np.isnan(b)).all() and np.allclose(
        a[~np.isnan(a)], b[~np.isnan(b)], rtol=tol, atol=tol)
    if not ok:
        raise AssertionError(f"{name}: PyTorch and NumPy disagree by "
                             f"{np.nanmax(np.abs(a - b))}:\n{a}\n{b}")


def t64(x):
    return torch.tensor(np.asarray(x, dtype=np.float64), dtype=torch.float64)


def ref_erf(x):
    r = _erf(x)
    check_close("erf", torch.erf(t64(x)).numpy(), r)
    return r


def ref_gelu(x, approximate="none"):
    if approximate == "none":
        r = fcall(lambda: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))))
    else:
        r = fcall(lambda: 0.5 * x * (1.0 + np.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))
    check_close("gelu", F.gelu(t64(x), approximate=approximate).numpy(), r)
    return r


UNARY_FLOAT = {
    # op: (reference, input range, oracle, tolerance)
    "neg": (np.negative, (-5, 5), "numpy", "exact"),
    "abs": (np.abs, (-5, 5), "numpy", "exact"),
    "exp": (np.exp, (-5, 5), "numpy", None),
    "log": (np.log, (0.05, 8), "numpy", None),
    "sqrt": (np.sqrt, (0.01, 9), "numpy", None),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), (0.01, 9), "numpy", None),
    "tanh": (np.tanh, (-4, 4), "numpy", None),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), (-8, 8), "numpy", None),
    "relu": (lambda x: np.maximum(x, 0.0), (-3, 3), "numpy", "exact"),
    "gelu": (ref_gelu, (-4, 4), "torch", None),
    "gelu_tanh": (lambda x: ref_gelu(x, "tanh"), (-4, 4), "torch", None),
    "erf": (ref_erf, (-3, 3), "torch", None),
    "sin": (np.sin, (-6, 6), "numpy", None),
    "cos": (np.cos, (-6, 6), "numpy", None),
    "floor": (np.floor, (-10, 10), "numpy", "exact"),
    "ceil": (np.ceil, (-10, 10), "numpy", "exact"),
}

ORACLE = {"numpy": "numpy-float64",
          "torch": "numpy-float64 formula, checked against torch-float64"}


def int_unary(op, x, dt):
    vals = [-int(v) if op == "neg" else abs(int(v)) for v in x.ravel()]
    return wrap(np.array(vals, dtype=object).reshape(x.shape), dt)


def int_div(a, b, bits):
    if b == 0:
        return 0
    return a // b  # floors, like NumPy; INT_MIN // -1 is wrapped later


def int_mod(a, b, bits):
    return 0 if b == 0 else a % b  # the divisor's sign, like NumPy


def int_pow(a, b, bits):
    if b < 0:
        return 1 if a == 1 else ((-1 if b % 2 else 1) if a == -1 else 0)
    return pow(a, b, 1 << bits)


INT_BINARY = {
    "add": lambda a, b, w: a + b,
    "sub": lambda a, b, w: a - b,
    "mul": lambda a, b, w: a * b,
    "div": int_div,
    "mod": int_mod,
    "pow": int_pow,
    "max": lambda a, b, w: max(a, b),
    "min": lambda a, b, w: min(a, b),
}

FLOAT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "mod": np.mod,
    "pow": np.power,
    "max": np.maximum,
    "min": np.minimum,
}

BOOL_BINARY = {"add": np.logical_or, "max": np.logical_or,
               "mul": np.logical_and, "min": np.logical_and}

BITS = {"i64": 64, "i32": 32, "i8": 8}


def ref_binary(op, a, b, dt):
    """The spec's binary op on values of `dt` (NumPy broadcasting)."""
    if is_float(dt):
        return round_float(fcall(FLOAT_BINARY[op], a, b), dt)
    if dt == "i1":
        return BOOL_BINARY[op](a, b)
    A, B = np.broadcast_arrays(np.asarray(a, dtype=object),
                               np.asarray(b, dtype=object))
    f = INT_BINARY[op]
    out = np.array([f(int(x), int(y), BITS[dt])
                    for x, y in zip(A.ravel(), B.ravel())],
                   dtype=object).reshape(A.shape)
    return wrap(out, dt)


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
           "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def ref_cast(x, src, dst):
    """The spec's cast row."""
    if src == dst:
        return x
    if is_float(src):
        if is_float(dst):
            return round_float(x, dst)
        if dst == "i1":
            return x != 0  # NaN != 0 is true
        lo, hi = int_range(dst)
        out = []
        for v in np.asarray(x, dtype=np.float64).ravel():
            if math.isnan(v):
                out.append(0)
            elif v >= hi + 1:
                out.append(hi)
            elif v <= lo - 1:
                out.append(lo)
            else:
                out.append(int(v))  # truncates toward zero
        return np.array(out, dtype=np.int64).reshape(np.shape(x))
    if src == "i1":
        if is_float(dst):
            return np.asarray(x, dtype=np.float64)
        return np.asarray(x, dtype=np.int64) if dst != "i1" else x
    if is_float(dst):
        return round_int_to_float(x, dst)
    if dst == "i1":
        return np.asarray(x) != 0
    return wrap(np.asarray(x, dtype=object), dst)


def reduce_ref(kind, x, axes, keepdims, dt):
    """The spec's reductions: floats in float64 then rounded once; ints with
    Python ints, wrapped; i1 max/min as any/all."""
    axes = tuple(axes) if axes else tuple(range(x.ndim))
    if is_float(dt):
        f = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
             "prod": np.prod}[kind]
        return round_float(fcall(f, x, axis=axes, keepdims=keepdims), dt)
    if dt == "i1":
        f = np.any if kind == "max" else np.all
        return f(x, axis=axes, keepdims=keepdims)
    obj = np.asarray(x, dtype=object)
    if kind in ("sum", "prod"):
        f = np.sum if kind == "sum" else np.prod
        init = 0 if kind == "sum" else 1
        r = f(obj, axis=axes, keepdims=keepdims, initial=init)
        return wrap(r, dt)
    f = np.max if kind == "max" else np.min
    return np.asarray(f(x, axis=axes, keepdims=keepdims), dtype=np.int64)


def softmax_ref(x, axis, log):
    """NumPy in float64 (the row max subtracted), checked with PyTorch."""
    if x.size == 0:  # nothing to compute (NumPy's max has no identity)
        return np.array(x, dtype=np.float64)
    def formula():
        m = np.max(x, axis=axis, keepdims=True)
        d = x - m
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return d - np.log(s) if log else np.exp(d) / s

    r = fcall(formula)
    t = t64(x)
    check_close("softmax", (torch.log_softmax(t, axis) if log else
                            torch.softmax(t, axis)).numpy(), r)
    return r


def norm_axes(x, axis):
    axis = axis % x.ndim
    return tuple(range(axis, x.ndim))


def layer_norm_ref(x, g, b, axis, eps):
    """Two passes in float64 (variance around the mean), checked with
    PyTorch, whose float64 layer_norm is less accurate at magnitude 1e4
    (about 1e-10: hence the wider agreement bound)."""
    axes = norm_axes(x, axis)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    r = fcall(lambda: (x - mean) / np.sqrt(var + eps) * g + b)
    shape = x.shape[axes[0]:]
    check_close("layer_norm",
                F.layer_norm(t64(x), shape, t64(g), t64(b), eps).numpy(), r,
                tol=1e-9)
    return r


def rms_norm_ref(x, g, axis, eps):
    axes = norm_axes(x, axis)
    ms = np.mean(x * x, axis=axes, keepdims=True)
    return fcall(lambda: x / np.sqrt(ms + eps) * g)


def int_matmul(a, b, dt):
    r = np.matmul(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    return wrap(r, dt)


def fmt(v, dt):
    """A literal for `v` in Kina IR."""
    if dt == "i1":
        return "true" if v else "false"
    if not is_float(dt):
        return str(int(v))
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(v))


# --- Elementwise: unary ------------------------------------------------------

# (actual shape, written dims): static, dynamic, symbolic, rank 0, size 0.
SHAPES = [
    ((3, 4), [3, 4]),
    ((5,), ["?"]),
    ((2, 3), ["N", 3]),
    ((), []),
    ((2, 1, 3), [2, 1, 3]),
    ((0, 3), ["?", 3]),
    ((4, 2), ["?", "?"]),
]


def gen_unary():
    for di, dt in enumerate(FLOATS):
        for oi, (op, (f, (lo, hi), oracle, tol)) in enumerate(
                UNARY_FLOAT.items()):
            kop = "gelu" if op == "gelu_tanh" else op
            attrs = ' {approximate = "tanh"}' if op == "gelu_tanh" else ""
            shape, dims = SHAPES[(oi + di) % len(SHAPES)]
            name = f"{op}_{dt}"
            x = rand(rng_of(name), dt, shape, lo, hi)
            S.add(name, op=kop, dtype=dt, params=[("x", dt, dims)],
                  results=[(dt, dims)],
                  body=[f"%r = {kop} %x{attrs}", "return %r"], inputs=[x],
                  outputs=[round_float(fcall(f, x), dt)],
                  oracle=ORACLE[oracle], tolerance=tol, group=f"unary_{dt}")
            # Edge values: NaN, infinities, signed zeros, subnormals, ...
            name = f"{op}_{dt}_edges"
            x = float_edges(dt)
            S.add(name, op=kop, dtype=dt, params=[("x", dt, ["?"])],
                  results=[(dt, ["?"])],
                  body=[f"%r = {kop} %x{attrs}", "return %r"], inputs=[x],
                  outputs=[round_float(fcall(f, x), dt)],
                  oracle=ORACLE[oracle], tolerance=tol, group=f"unary_{dt}")
    for dt in INTS:
        for op in ["neg", "abs"]:
            for variant in ["random", "edges"]:
                name = f"{op}_{dt}" + ("_edges" if variant == "edges" else "")
                rng = rng_of(name)
                x = (int_edges(dt) if variant == "edges"
                     else rand_full(rng, dt, (3, 4)))
                dims = ["?"] if variant == "edges" else [3, 4]
                S.add(name, op=op, dtype=dt, params=[("x", dt, dims)],
                      results=[(dt, dims)], body=[f"%r = {op} %x", "return %r"],
                      inputs=[x], outputs=[int_unary(op, x, dt)],
                      oracle="python-int", group=f"unary_{dt}")
    for shape, dims, suffix in [((2, 5), [2, 5], ""), ((), [], "_rank0")]:
        name = "not_i1" + suffix
        x = rand(rng_of(name), "i1", shape) if shape else np.array(True)
        S.add(name, op="not", dtype="i1", params=[("x", "i1", dims)],
              results=[("i1", dims)], body=["%r = not %x", "return %r"],
              inputs=[x], outputs=[~x], oracle="numpy", group="unary_i1")


# --- Elementwise: binary -----------------------------------------------------

BINARY_OPS = ["add", "sub", "mul", "div", "mod", "pow", "max", "min"]
BIN_SHAPES = [
    ((2, 5), [2, 5], (2, 5), [2, 5]),
    ((3, 4), ["?", 4], (3, 4), ["?", 4]),
    ((3, 2), ["N", 2], (3, 2), ["N", 2]),
    ((6,), [6], (6,), [6]),
]


def binary_inputs(rng, op, dt, shape_a, shape_b):
    if is_float(dt):
        if op == "div":
            return rand(rng, dt, shape_a), rand_away(rng, dt, shape_b, 0.25, 4)
        if op == "mod":
            return (rand(rng, dt, shape_a, -10, 10),
                    rand_away(rng, dt, shape_b, 0.5, 4))
        if op == "pow":
            return rand(rng, dt, shape_a, 0.1, 4), rand(rng, dt, shape_b, -3, 3)
        return rand(rng, dt, shape_a), rand(rng, dt, shape_b)
    if dt == "i1":
        return rand(rng, dt, shape_a), rand(rng, dt, shape_b)
    if op in ("div", "mod"):  # divisors include 0
        return rand_full(rng, dt, shape_a), rand(rng, dt, shape_b, -20, 20)
    if op == "pow":  # negative exponents, wrapping results
        return rand(rng, dt, shape_a, -5, 5), rand(rng, dt, shape_b, -3, 12)
    return rand_full(rng, dt, shape_a), rand_full(rng, dt, shape_b)


def binary_case(name, op, dt, a, da, b, db, dout, group, oracle=None,
                tol=None, lit=None):
    """`%r = op %a, %b`; `lit` = ("left"|"right", value) puts a literal in
    place of one operand."""
    ref = ref_binary(op, a, b, dt)
    params = [("a", dt, da), ("b", dt, db)]
    ops = "%a, %b"
    inputs = [a, b]
    if lit:
        side, v = lit
        if side == "right":
            params, ops, inputs = [("a", dt, da)], f"%a, {fmt(v, dt)}", [a]
        else:
            params, ops, inputs = [("b", dt, db)], f"{fmt(v, dt)}, %b", [b]
    if tol is None and op in ("max", "min"):
        tol = "exact"
    S.add(name, op=op, dtype=dt, params=params, results=[(dt, dout)],
          body=[f"%r = {op} {ops}", "return %r"], inputs=inputs,
          outputs=[ref], group=group, tolerance=tol,
          oracle=oracle or ("numpy-float64" if is_float(dt) else
                            "python-int" if dt != "i1" else "numpy"))


def gen_binary():
    for di, dt in enumerate(NUMERIC):
        for oi, op in enumerate(BINARY_OPS):
            sa, da, sb, db = BIN_SHAPES[(di + oi) % len(BIN_SHAPES)]
            name = f"{op}_{dt}"
            a, b = binary_inputs(rng_of(name), op, dt, sa, sb)
            binary_case(name, op, dt, a, da, b, db, da, f"binary_{dt}")
            # Every pair of edge values: a column against a row.
            name = f"{op}_{dt}_edges"
            e = float_edges(dt) if is_float(dt) else int_edges(dt)
            n = len(e)
            binary_case(name, op, dt, e.reshape(n, 1), [n, 1],
                        e.reshape(1, n), [1, n], [n, n], f"binary_{dt}_edges")
    for op in ["add", "mul", "max", "min"]:
        name = f"{op}_i1"
        a, b = binary_inputs(rng_of(name), op, "i1", (3, 4), (3, 4))
        binary_case(name, op, "i1", a, [3, 4], b, [3, 4], [3, 4], "binary_i1")
        name = f"{op}_i1_table"  # the truth table by broadcasting
        binary_case(name, op, "i1", np.array([[False], [True]]), [2, 1],
                    np.array([[False, True]]), [1, 2], [2, 2], "binary_i1")


# (a shape, a dims, b shape, b dims, result dims); None shape: a literal.
BROADCASTS = {
    "row": ((3, 4), [3, 4], (4,), [4], [3, 4]),
    "column": ((3, 4), [3, 4], (3, 1), [3, 1], [3, 4]),
    "rank_expand": ((2, 3, 4), [2, 3, 4], (3, 1), [3, 1], [2, 3, 4]),
    "outer": ((3, 1), [3, 1], (1, 4), [1, 4], [3, 4]),
    "scalar_tensor": ((3, 4), [3, 4], (), [], [3, 4]),
    "rank0_both": ((), [], (), [], []),
    "dyn_row": ((3, 4), ["?", 4], (4,), [4], ["?", 4]),
    "dyn_both": ((5,), ["?"], (5,), ["?"], ["?"]),
    "dyn_one_at_runtime": ((1,), ["?"], (4,), [4], [4]),
    "dyn_stretch_both": ((3, 1), ["?", "?"], (1, 4), ["?", "?"], ["?", "?"]),
    "sym": ((3, 4), ["N", 4], (3, 1), ["N", 1], ["N", 4]),
    "sym_one_at_runtime": ((1,), ["N"], (4,), ["M"], ["?"]),
    "size0": ((0, 4), [0, 4], (4,), [4], [0, 4]),
    "size0_dyn": ((0, 3), ["?", 3], (1, 3), [1, 3], ["?", 3]),
    "size1": ((1, 1), [1, 1], (1,), [1], [1, 1]),
    "rank4": ((2, 1, 3, 1), [2, 1, 3, 1], (4, 1, 5), [4, 1, 5],
              [2, 4, 3, 5]),
    "lit_right": ((3, 4), [3, 4], None, None, [3, 4]),
    "lit_left": (None, None, (2, 3), ["?", 3], ["?", 3]),
}
LITERALS = {"f64": 0.1, "f32": 0.1, "f16": 0.1, "bf16": 0.1, "i64": 3,
            "i32": -7, "i8": 5, "i1": True}


def gen_broadcast():
    ops_cycle = ["add", "mul", "sub", "max", "min", "div"]
    for pi, (pat, (sa, da, sb, db, dout)) in enumerate(BROADCASTS.items()):
        for k in range(2):
            dt = DTYPES[(pi * 2 + k) % len(DTYPES)]
            op = ops_cycle[(pi + k) % len(ops_cycle)]
            if dt == "i1" and op not in BOOL_BINARY:
                op = "add"
            if dt in INTS and op == "div":
                op = "mod"
            name = f"bcast_{pat}_{op}_{dt}"
            rng = rng_of(name)
            lit = None
            if sa is None:
                lit = ("left", LITERALS[dt])
                a = np.array(round_float(LITERALS[dt], dt) if is_float(dt)
                             else LITERALS[dt])
                _, b = binary_inputs(rng, op, dt, (1,), sb)
            elif sb is None:
                lit = ("right", LITERALS[dt])
                b = np.array(round_float(LITERALS[dt], dt) if is_float(dt)
                             else LITERALS[dt])
                a, _ = binary_inputs(rng, op, dt, sa, (1,))
            else:
                a, b = binary_inputs(rng, op, dt, sa, sb)
            binary_case(name, op, dt, a, da, b, db, dout, "broadcast", lit=lit)
    # Run-time mismatches: Validation Error (1).
    mism = [
        ("dyn", (3,), ["?"], (4,), [4], [4], ["add: dim 0", "size 3"]),
        ("dyn_both", (2, 3), ["?", "?"], (3, 3), ["?", "?"], ["?", "?"],
         ["add: dim 0", "size 2"]),
        ("sym", (3,), ["N"], (4,), ["N"], ["N"], ["%b dim 0 (N) has size 4"]),
        ("static_arg", (3, 5), [3, 4], (4,), [4], [3, 4],
         ["%a dim 1 has size 5, expected 4"]),
    ]
    for tag, sa, da, sb, db, dout, msg in mism:
        for dt in ["f32", "i32"]:
            name = f"bcast_mismatch_{tag}_{dt}"
            rng = rng_of(name)
            S.add(name, op="add", dtype=dt,
                  params=[("a", dt, da), ("b", dt, db)],
                  results=[(dt, dout)], body=["%r = add %a, %b", "return %r"],
                  inputs=[rand(rng, dt, sa), rand(rng, dt, sb)], status=1,
                  message=msg, group="broadcast")


# --- Compare and select ------------------------------------------------------


def gen_compare():
    for di, dt in enumerate(DTYPES):
        for oi, (op, f) in enumerate(COMPARE.items()):
            name = f"{op}_{dt}"
            rng = rng_of(name)
            # Few distinct values, so that equal pairs occur.
            if is_float(dt):
                a = round_float(rng.integers(-3, 4, (3, 4)) * 0.5, dt)
                b = round_float(rng.integers(-3, 4, (3, 4)) * 0.5, dt)
            elif dt == "i1":
                a, b = rand(rng, dt, (3, 4)), rand(rng, dt, (3, 4))
            else:
                a, b = rand(rng, dt, (3, 4), -2, 2), rand(rng, dt, (3, 4), -2, 2)
                a[0, 0], b[0, 1] = int_range(dt)  # the bounds compare too
            if (di + oi) % 3 == 1:  # broadcast a column against a row
                a, da, b, db, dout = a[:, :1], ["?", 1], b[:1, :], [1, 4], \
                    ["?", 4]
            else:
                da = db = dout = [3, 4]
            S.add(name, op=op, dtype=dt, params=[("a", dt, da), ("b", dt, db)],
                  results=[("i1", dout)],
                  body=[f"%r = {op} %a, %b", "return %r"], inputs=[a, b],
                  outputs=[f(a, b)], group=f"compare_{dt}")
        if is_float(dt):
            e = float_edges(dt)
            n = len(e)
            for op, f in COMPARE.items():
                name = f"{op}_{dt}_edges"
                S.add(name, op=op, dtype=dt,
                      params=[("a", dt, [n, 1]), ("b", dt, [1, n])],
                      results=[("i1", [n, n])],
                      body=[f"%r = {op} %a, %b", "return %r"],
                      inputs=[e.reshape(n, 1), e.reshape(1, n)],
                      outputs=[f(e.reshape(n, 1), e.reshape(1, n))],
                      group=f"compare_{dt}_edges")


def gen_select():
    for dt in DTYPES:
        name = f"select_{dt}"
        rng = rng_of(name)
        c = rand(rng, "i1", (3, 4))
        a = float_edges(dt)[:12].reshape(3, 4) if is_float(dt) else \
            rand(rng, dt, (3, 4), -100, 100)
        b = rand(rng, dt, (3, 4), -100, 100)  # (i1: fair coins)
        S.add(name, op="select", dtype=dt,
              params=[("c", "i1", [3, 4]), ("a", dt, [3, 4]),
                      ("b", dt, [3, 4])],
              results=[(dt, [3, 4])], body=["%r = select %c, %a, %b",
                                            "return %r"],
              inputs=[c, a, b], outputs=[np.where(c, a, b)],
              tolerance="exact", oracle="numpy", group="select")
    # Three-way broadcasting and literal operands.
    pats = [
        ("bcast3", "f32", (3, 1), [3, 1], (4,), [4], (), [], [3, 4], None),
        ("bcast3_dyn", "i32", (2, 1), ["?", 1], (1, 3), [1, "?"], (2, 3),
         ["N", 3], ["N", 3], None),
        ("bcast3_rank", "f16", (4,), [4], (2, 3, 1), [2, 3, 1], (3, 4),
         [3, 4], [2, 3, 4], None),
        ("cond_scalar", "i64", (), [], (2, 3), [2, 3], (2, 3), [2, 3], [2, 3],
         None),
        ("lit_branch", "f64", (3, 4), [3, 4], (3, 4), [3, 4], None, None,
         [3, 4], "b"),
        ("lit_cond", "bf16", None, None, (2, 3), [2, 3], (3,), [3], [2, 3],
         "c"),
        ("dyn_one_at_runtime", "i8", (1, 4), ["?", 4], (3, 1), ["?", 1],
         (1,), [1], ["?", 4], None),
        ("size0", "f32", (0, 1), ["?", 1], (3,), [3], (1, 3), [1, 3],
         ["?", 3], None),
    ]
    for tag, dt, sc, dc, sa, da, sb, db, dout, lit in pats:
        name = f"select_{tag}_{dt}"
        rng = rng_of(name)
        params, ins, opnds = [], [], []
        c = rand(rng, "i1", sc) if sc is not None else np.array(True)
        if lit == "c":
            opnds.append("true")
        else:
            params.append(("c", "i1", dc))
            ins.append(c)
            opnds.append("%c")
        a = rand(rng, dt, sa, -50, 50)
        params.append(("a", dt, da))
        ins.append(a)
        opnds.append("%a")
        if lit == "b":
            b = np.array(-2.5)
            opnds.append("-2.5")
        else:
            b = rand(rng, dt, sb, -50, 50)
            params.append(("b", dt, db))
            ins.append(b)
            opnds.append("%b")
        S.add(name, op="select", dtype=dt, params=params, results=[(dt, dout)],
              body=[f"%r = select {', '.join(opnds)}", "return %r"],
              inputs=ins, outputs=[np.where(c, a, b)], tolerance="exact",
              oracle="numpy", group="select")
    name = "select_mismatch_f32"
    rng = rng_of(name)
    S.add(name, op="select", dtype="f32",
          params=[("c", "i1", ["?"]), ("a", "f32", ["?"]),
                  ("b", "f32", ["?"])],
          results=[("f32", ["?"])], body=["%r = select %c, %a, %b",
                                          "return %r"],
          inputs=[rand(rng, "i1", (3,)), rand(rng, "f32", (4,)),
                  rand(rng, "f32", (4,))], status=1,
          message=["select: dim 0", "size 3"],
          group="select")


# --- cast --------------------------------------------------------------------


def cast_inputs(rng, src, shape):
    if is_float(src):
        n = int(np.prod(shape))
        half = n // 2 if n > 1 else 1
        # Ordinary values with fractions, and a wide spread of magnitudes
        # (subnormal to overflow in the narrower types).
        plain = rng.uniform(-300, 300, half)
        wide = np.ldexp(rng.uniform(1, 2, n - half),
                        rng.integers(-30, 40, n - half)) * \
            np.where(rng.random(n - half) < 0.5, -1, 1)
        return nonzero(lambda: round_float(
            np.concatenate([plain, wide]).reshape(shape), src))
    return rand_full(rng, src, shape) if src != "i1" else rand(rng, src, shape)


def cast_case(name, src, dst, x, dims, group="cast", note=None):
    S.add(name, op="cast", dtype=src, params=[("x", src, dims)],
          results=[(dst, dims)], body=[f"%r = cast %x {{to = {dst}}}",
                                       "return %r"],
          inputs=[x], outputs=[ref_cast(x, src, dst)], tolerance="exact",
          oracle="spec (numpy-float64, python-int)", group=group, note=note)


def cast_edge_values(src, dst):
    """Values of `src` at the interesting places of `dst`: ties (to even),
    just above and below ties (a double rounding gets these wrong), the
    overflow threshold, subnormal ties, specials."""
    if is_float(dst):
        p, emin, emax = FLOAT_FORMAT[dst]
        if is_float(src):
            u = 2.0 ** -p  # half a unit in the last place at 1.0
            sub = float_min_subnormal(dst)
            with np.errstate(over="ignore"):
                top = [float(np.ldexp(2 - 2.0 ** -p, emax)),
                       float(np.ldexp(2 - 2.0 ** -p - 2.0 ** -(p + 8), emax))]
            vals = top + [1 + u, 1 + 3 * u, 1 + u + u * 2.0 ** -22,
                    -(1 + u + u * 2.0 ** -22), 1 + u - u * 2.0 ** -22,
                    1 + u / 2, 1 + 5 * u / 2, float_max(dst),
                    sub / 2, sub * 1.5, sub * 0.75, sub / 2 + sub * 2.0 ** -20,
                    -sub / 2, float_min_normal(dst),
                    float_min_normal(dst) * (1 - 2.0 ** -(p + 1)),
                    NAN, INF, -INF, 0.0, -0.0, 0.1, -1e4, 3.0e38, 1e-8,
                    65520.0, 65519.0, 1e-30]
            r = round_float(np.array(vals), src)
            # Only values that src holds exactly.
            return np.array([v for v, w in zip(vals, r)
                             if (math.isnan(v) and math.isnan(w)) or v == w])
        # int -> float: ties and overflow of the float type.
        lo, hi = int_range(src)
        vals = [lo, hi, 0, 1, -1, 2 ** p + 1, 2 ** p + 3, -(2 ** p + 1),
                2 ** (p + 1) + 2, 2 ** (p + 1) + 6, 2 ** p - 1,
                2 ** (p + 2) + 9, 65504, 65519, 65520, -65520, 65536,
                257, 259, 16777217, 2 ** 53 + 1, 2 ** 62 + 2 ** 40 + 1,
                (2 ** p + 1) * 2 ** 30 + 1, hi - 2 ** 20]
        return np.array(sorted(set(v for v in vals if lo <= v <= hi)),
                        dtype=np.int64)
    # float -> int / i1: truncation, saturation, NaN.
    vals = [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -2.7,
            1e-40, 1e4, -1e4, 3e9, -3e9, 1e19, -1e19, 1e30, -1e30]
    if dst != "i1":
        lo, hi = int_range(dst)
        vals += [hi, hi + 0.5, hi + 1.0, lo, lo - 0.5, lo - 1.0, lo + 0.5]
    r = round_float(np.array(vals, dtype=np.float64), src)
    return r


def gen_cast():
    shapes = [((3, 4), [3, 4]), ((7,), ["?"]), ((2, 3), ["N", 3]), ((), [])]
    k = 0
    for src in DTYPES:
        for dst in DTYPES:
            shape, dims = shapes[k % len(shapes)]
            k += 1
            name = f"cast_{src}_to_{dst}"
            x = cast_inputs(rng_of(name), src, shape if shape else (1,))
            if not shape:
                x = x.reshape(())
            cast_case(name, src, dst, x, dims)
    for src in FLOATS:
        for dst in DTYPES:
            if dst != src:
                x = cast_edge_values(src, dst)
                cast_case(f"cast_{src}_to_{dst}_edges", src, dst, x, ["?"],
                          group="cast_edges")
    for src in INTS:
        for dst in FLOATS:
            x = cast_edge_values(src, dst)
            cast_case(f"cast_{src}_to_{dst}_edges", src, dst, x, ["?"],
                      group="cast_edges")
    for src, dst in [("f32", "i8"), ("i64", "bf16")]:
        x = np.zeros((2, 0), dtype=np.float64 if is_float(src) else np.int64)
        cast_case(f"cast_{src}_to_{dst}_size0", src, dst, x, [2, "?"],
                  group="cast_edges")
    # Integer narrowing wraps at the bounds.
    for src, dst in [("i64", "i32"), ("i64", "i8"), ("i32", "i8")]:
        lo, hi = int_range(dst)
        x = np.array([lo - 1, hi + 1, lo, hi, 2 * hi + 3, -2 * hi, 0, 1, -1],
                     dtype=np.int64)
        cast_case(f"cast_{src}_to_{dst}_wrap", src, dst, x, [9],
                  group="cast_edges")


# --- constant, iota ----------------------------------------------------------


def dense_text(v, dt):
    if v.ndim == 0:
        return fmt(v.item(), dt)
    return "[" + ", ".join(dense_text(e, dt) for e in v) + "]"


def gen_constant():
    for dt in DTYPES:
        rng = rng_of(f"constant_{dt}")
        if is_float(dt):
            splat, scalar = 0.1, -2.5e-3
            dense = np.array([[1.5, -0.0], [3.140625, 7e-3],
                              [float_max(dt), -1e4]])
        elif dt == "i1":
            splat, scalar = True, False
            dense = np.array([[True, False], [False, True], [True, True]])
        else:
            lo, hi = int_range(dt)
            splat, scalar = -3, hi
            dense = np.array([[lo, hi], [0, -1], [int(rng.integers(-100, 100)),
                                                  42]])

        def val(v):
            if is_float(dt):
                return round_float(np.asarray(v, dtype=np.float64), dt)
            return np.asarray(v, dtype=bool if dt == "i1" else np.int64)

        for tag, text, dims, v in [
                ("splat", fmt(splat, dt), [2, 3],
                 val(np.full((2, 3), splat))),
                ("dense", f"dense<{dense_text(dense, dt)}>", [3, 2],
                 val(dense)),
                ("scalar", fmt(scalar, dt), [], val(np.array(scalar)))]:
            name = f"constant_{tag}_{dt}"
            S.add(name, op="constant", dtype=dt, params=[],
                  results=[(dt, dims)],
                  body=[f"%c = constant {text} : {ty(dt, dims)}",
                        "return %c"], inputs=[], outputs=[v],
                  tolerance="exact", oracle="spec", group="constant")
        # A constant used by an op with an argument.
        name = f"constant_used_{dt}"
        x = rand(rng_of(name), dt, (3, 2))
        op = "add" if dt != "i1" else "max"
        S.add(name, op="constant", dtype=dt, params=[("x", dt, ["?", 2])],
              results=[(dt, ["?", 2])],
              body=[f"%c = constant dense<{dense_text(dense[:2], dt)}> : "
                    f"{ty(dt, [2, 2])}",
                    "%s = slice %c {start = [0, 0], stop = [1, 2], "
                    "step = [1, 1]}",
                    f"%r = {op} %x, %s", "return %r"],
              inputs=[x], outputs=[ref_binary(op, x, val(dense[:1]), dt)],
              oracle="spec", group="constant")
    for tag, text, v in [("nan", "nan", NAN), ("inf", "inf", INF),
                         ("neg_inf", "-inf", -INF), ("neg_zero", "-0.0", -0.0)]:
        name = f"constant_{tag}_f32"
        S.add(name, op="constant", dtype="f32", params=[],
              results=[("f32", [4])],
              body=[f"%c = constant {text} : f32[4]", "return %c"],
              inputs=[], outputs=[np.full(4, v)], tolerance="exact",
              oracle="spec", group="constant")


def gen_iota():
    cases = [
        ([6], 0), ([3, 4], 1), ([3, 4], -2), ([2, 3, 2], 2),
    ]
    for i, dt in enumerate(NUMERIC):
        for j in range(2):
            dims, axis = cases[(i + j) % len(cases)]
            name = f"iota_{dt}_{len(dims)}d_axis{axis}".replace("-", "m")
            idx = np.indices(dims)[axis]
            v = round_float(idx, dt) if is_float(dt) else idx.astype(np.int64)
            S.add(name, op="iota", dtype=dt, params=[], results=[(dt, dims)],
                  body=[f"%r = iota {{axis = {axis}}} : {ty(dt, dims)}",
                        "return %r"], inputs=[], outputs=[v],
                  tolerance="exact", oracle="numpy", group="iota")
    # Rounding of large indices: bf16 holds 256, 258, 260; f16 2048, 2050.
    for dt, n in [("bf16", 300), ("f16", 2100)]:
        name = f"iota_{dt}_rounding"
        S.add(name, op="iota", dtype=dt, params=[], results=[(dt, [n])],
              body=[f"%r = iota {{axis = 0}} : {dt}[{n}]", "return %r"],
              inputs=[], outputs=[round_float(np.arange(n), dt)],
              tolerance="exact", oracle="numpy", group="iota")
    name = "iota_i32_size0"
    S.add(name, op="iota", dtype="i32", params=[], results=[("i32", [2, 0])],
          body=["%r = iota {axis = 1} : i32[2, 0]", "return %r"], inputs=[],
          outputs=[np.zeros((2, 0), dtype=np.int64)], tolerance="exact",
          oracle="numpy", group="iota")
    # Dims from a symbol bound by an argument.
    name = "iota_i64_symbolic"
    x = rand(rng_of(name), "f32", (5, 2))
    S.add(name, op="iota", dtype="i64", params=[("x", "f32", ["N", 2])],
          results=[("i64", ["N", 2])],
          body=["%r = iota {axis = 0} : i64[N, 2]", "return %r"],
          inputs=[x], outputs=[np.indices((5, 2))[0]], tolerance="exact",
          oracle="numpy", group="iota")


# --- matmul ------------------------------------------------------------------


def matmul_ref(a, b, dt):
    if is_float(dt):
        return round_float(np.matmul(a, b), dt)
    return int_matmul(a, b, dt)


def mm_inputs(rng, dt, sa, sb):
    if is_float(dt):
        return rand(rng, dt, sa, -2, 2), rand(rng, dt, sb, -2, 2)
    if dt == "i64":
        return rand_full(rng, dt, sa), rand_full(rng, dt, sb)
    return rand(rng, dt, sa, -50, 50), rand(rng, dt, sb, -50, 50)


def gen_matmul():
    for dt in NUMERIC:
        name = f"matmul_{dt}"
        a, b = mm_inputs(rng_of(name), dt, (3, 4), (4, 5))
        S.add(name, op="matmul", dtype=dt,
              params=[("a", dt, [3, 4]), ("b", dt, [4, 5])],
              results=[(dt, [3, 5])], body=["%r = matmul %a, %b", "return %r"],
              inputs=[a, b], outputs=[matmul_ref(a, b, dt)],
              oracle="numpy-float64" if is_float(dt) else "python-int",
              group="matmul")
    shapes = [
        # tag, a shape, a dims, b shape, b dims, result dims
        ("batch", (2, 3, 4), [2, 3, 4], (2, 4, 5), [2, 4, 5], [2, 3, 5]),
        ("batch_bcast", (2, 1, 3, 4), [2, 1, 3, 4], (5, 4, 2), [5, 4, 2],
         [2, 5, 3, 2]),
        ("batch_rank", (3, 4), [3, 4], (2, 4, 5), [2, 4, 5], [2, 3, 5]),
        ("vec_left", (4,), [4], (4, 5), [4, 5], [5]),
        ("vec_right", (3, 4), [3, 4], (4,), [4], [3]),
        ("vec_both", (4,), [4], (4,), [4], []),
        ("vec_left_batch", (4,), [4], (2, 4, 5), [2, 4, 5], [2, 5]),
        ("vec_right_batch", (2, 3, 4), [2, 3, 4], (4,), [4], [2, 3]),
        ("k0", (3, 0), [3, 0], (0, 5), [0, 5], [3, 5]),
        ("k0_dyn", (2, 0), ["?", "?"], (0, 3), ["?", "?"], ["?", "?"]),
        ("m0", (0, 4), ["?", 4], (4, 5), [4, 5], ["?", 5]),
        ("dyn", (3, 6), ["?", "?"], (6, 2), ["?", "?"], ["?", "?"]),
        ("sym", (3, 5), ["M", "K"], (5, 4), ["K", "N"], ["M", "N"]),
        ("batch_dyn_one", (1, 2, 3), ["?", 2, 3], (4, 3, 2), ["?", 3, 2],
         ["?", 2, 2]),
    ]
    for i, (tag, sa, da, sb, db, dout) in enumerate(shapes):
        dt = ["f32", "f64", "f16", "bf16", "i32", "i64", "i8"][i % 7]
        name = f"matmul_{tag}_{dt}"
        a, b = mm_inputs(rng_of(name), dt, sa, sb)
        S.add(name, op="matmul", dtype=dt, params=[("a", dt, da), ("b", dt, db)],
              results=[(dt, dout)], body=["%r = matmul %a, %b", "return %r"],
              inputs=[a, b], outputs=[matmul_ref(a, b, dt)],
              oracle="numpy-float64" if is_float(dt) else "python-int",
              group="matmul")
    # f16 and bf16 accumulate in f32: a sum of ones that stalls at 2048 in
    # f16 (256 in bf16) when accumulated in the narrow type.
    for dt, k in [("f16", 2100), ("bf16", 300)]:
        name = f"matmul_{dt}_accumulate_f32"
        a = np.ones((1, k))
        b = np.ones((k, 2))
        b[0, 1] = 2.0
        S.add(name, op="matmul", dtype=dt,
              params=[("a", dt, [1, k]), ("b", dt, [k, 2])],
              results=[(dt, [1, 2])], body=["%r = matmul %a, %b", "return %r"],
              inputs=[a, b], outputs=[matmul_ref(a, b, dt)], group="matmul")
    # Run-time mismatches.
    mism = [
        ("k_dyn", (3, 4), ["?", "?"], (5, 2), ["?", "?"], ["?", "?"],
         ["matmul: contraction dim 1", "size 4"]),
        ("k_sym", (3, 4), ["M", "K"], (5, 2), ["K", "N"], ["M", "N"],
         ["%b dim 0 (K) has size 5"]),
        ("batch_dyn", (2, 3, 4), ["?", 3, 4], (3, 4, 5), ["?", 4, 5],
         ["?", 3, 5], ["matmul: dim 0", "size 2"]),
        ("vec_dyn", (4,), ["?"], (3, 2), ["?", 2], [2],
         ["matmul: contraction dim 0", "size 4"]),
    ]
    for tag, sa, da, sb, db, dout, msg in mism:
        name = f"matmul_mismatch_{tag}_f32"
        a, b = mm_inputs(rng_of(name), "f32", sa, sb)
        S.add(name, op="matmul", dtype="f32",
              params=[("a", "f32", da), ("b", "f32", db)],
              results=[("f32", dout)], body=["%r = matmul %a, %b", "return %r"],
              inputs=[a, b], status=1, message=msg, group="matmul")


# --- Reductions --------------------------------------------------------------

REDUCE_TYPES = {
    "sum": NUMERIC, "mean": FLOATS, "max": DTYPES, "min": DTYPES,
    "prod": NUMERIC,
}
# (actual shape, dims, axes, keepdims, result dims)
REDUCE_PATTERNS = [
    ((3, 4, 5), [3, 4, 5], [1], False, [3, 5]),
    ((2, 4, 5), ["?", 4, 5], [0, -1], True, [1, 4, 1]),
    ((3, 6), ["N", 6], [], False, []),
]


def reduce_inputs(rng, kind, dt, shape):
    if kind == "prod":
        if is_float(dt):
            return round_float(rng.uniform(0.5, 1.5, shape) *
                               np.where(rng.random(shape) < 0.2, -1, 1), dt)
        return rand(rng, dt, shape, -3, 3)
    if dt in INTS and kind == "sum":
        return rand_full(rng, dt, shape)  # wraps
    if dt in INTS:
        return rand(rng, dt, shape, -1000, 1000)
    if dt == "i1":  # rows that are all true, all false and mixed
        x = rand(rng, dt, shape)
        x[0] = True
        if shape[0] > 1:
            x[1] = False
        return x
    return rand(rng, dt, shape)


def reduce_case(name, kind, dt, x, dims, axes, keepdims, rdims, group=None,
                status=0, message=None):
    attrs = (f"{{axes = [{', '.join(str(a) for a in axes)}], "
             f"keepdims = {'true' if keepdims else 'false'}}}")
    out = None
    if status == 0:
        out = [reduce_ref(kind, x, axes, keepdims, dt)]
    S.add(name, op=f"reduce_{kind}", dtype=dt, params=[("x", dt, dims)],
          results=[(dt, rdims)],
          body=[f"%r = reduce_{kind} %x {attrs}", "return %r"], inputs=[x],
          outputs=out, status=status, message=message,
          tolerance="exact" if kind in ("max", "min") else None,
          oracle="numpy-float64" if is_float(dt) else "python-int",
          group=group or f"reduce_{kind}")


def gen_reductions():
    for kind, types in REDUCE_TYPES.items():
        for dt in types:
            for pi, (shape, dims, axes, keep, rdims) in enumerate(
                    REDUCE_PATTERNS):
                name = f"reduce_{kind}_{dt}_p{pi}"
                x = reduce_inputs(rng_of(name), kind, dt, shape)
                reduce_case(name, kind, dt, x, dims, axes, keep, rdims)
    # NaN propagates (like NumPy's sum, mean, max, min, prod).
    for kind in REDUCE_TYPES:
        for dt in ["f32", "bf16"]:
            name = f"reduce_{kind}_{dt}_nan"
            x = reduce_inputs(rng_of(name), kind, dt, (3, 4))
            x[1, 2] = NAN
            x[2, 0] = INF if kind != "prod" else -INF
            reduce_case(name, kind, dt, x, [3, 4], [1], False, [3],
                        group="reduce_special")
    # Empty extents: sum 0, prod 1, mean NaN; max/min are status 1.
    specials = [
        ("sum", "f32", (0, 3), [0, 3], [0], False, [3]),
        ("sum", "i64", (2, 0), [2, "?"], [1], False, [2]),
        ("prod", "i32", (0, 3), ["?", 3], [0], True, [1, 3]),
        ("prod", "f16", (0,), ["?"], [], False, []),
        ("mean", "f32", (0, 3), ["?", 3], [0], False, [3]),
        ("mean", "f64", (2, 0), [2, 0], [-1], False, [2]),
        ("max", "f32", (0, 3), [0, 3], [1], False, [0]),  # nothing empty
        ("min", "i8", (0, 3), ["N", 3], [1], True, ["N", 1]),
    ]
    for kind, dt, shape, dims, axes, keep, rdims in specials:
        name = f"reduce_{kind}_{dt}_empty_{'_'.join(map(str, shape)) or 's'}"
        x = np.zeros(shape, dtype=np.float64 if is_float(dt) else np.int64)
        reduce_case(name, kind, dt, x, dims, axes, keep, rdims,
                    group="reduce_special")
    for kind, dt, shape, dims, axes, rdims in [
            ("max", "f32", (0, 3), ["?", 3], [0], [3]),
            ("min", "i32", (2, 0), [2, "N"], [1], [2]),
            ("max", "i1", (0,), ["?"], [], []),
            ("min", "bf16", (2, 0, 3), [2, "?", 3], [0, 1], [3])]:
        name = f"reduce_{kind}_{dt}_empty_status"
        x = np.zeros(shape, dtype=bool if dt == "i1" else np.float64
                     if is_float(dt) else np.int64)
        reduce_case(name, kind, dt, x, dims, axes, False, rdims,
                    group="reduce_special", status=1,
                    message=[f"reduce_{kind}", "empty"])
    # f16/bf16 accumulate in f32.
    for kind, dt, x in [("sum", "f16", np.ones(3000)),
                        ("mean", "f16", np.full(8, 60000.0)),
                        ("sum", "bf16", np.ones(300)),
                        ("mean", "bf16", np.full(300, 1.0) + 2.0 ** -6)]:
        name = f"reduce_{kind}_{dt}_accumulate_f32"
        x = round_float(x, dt)
        reduce_case(name, kind, dt, x, [len(x)], [0], False, [],
                    group="reduce_special")
    # keepdims with every axis, rank 0, 1e4 magnitudes.
    name = "reduce_sum_f64_all_keepdims"
    x = rand(rng_of(name), "f64", (2, 3))
    reduce_case(name, "sum", "f64", x, [2, 3], [], True, [1, 1],
                group="reduce_special")
    name = "reduce_max_f32_rank0"
    reduce_case(name, "max", "f32", np.array(-2.5), [], [], False, [],
                group="reduce_special")
    name = "reduce_mean_f32_large"
    x = rand(rng_of(name), "f32", (4, 8), -1e4, 1e4)
    reduce_case(name, "mean", "f32", x, [4, 8], [1], False, [4],
                group="reduce_special")


# --- argmax / argmin ---------------------------------------------------------


def arg_ref(kind, x, axis, keepdims):
    f = np.argmax if kind == "argmax" else np.argmin
    r = f(x, axis=axis)
    if keepdims:
        r = np.expand_dims(r, axis)
    return np.asarray(r, dtype=np.int64)


def arg_case(name, kind, dt, x, dims, axis, keep, rdims, status=0,
             message=None, group="argmax"):
    attrs = f"{{axis = {axis}, keepdims = {'true' if keep else 'false'}}}"
    S.add(name, op=kind, dtype=dt, params=[("x", dt, dims)],
          results=[("i64", rdims)],
          body=[f"%r = {kind} %x {attrs}", "return %r"], inputs=[x],
          outputs=None if status else [arg_ref(kind, x, axis, keep)],
          status=status, message=message, oracle="numpy", group=group)


def gen_argmax():
    for dt in DTYPES:
        for kind in ["argmax", "argmin"]:
            name = f"{kind}_{dt}"
            rng = rng_of(name)
            # Few distinct values: ties, where the first index must win.
            if is_float(dt):
                x = round_float(rng.integers(-2, 3, (3, 5)) * 1.5, dt)
            elif dt == "i1":
                x = rand(rng, dt, (3, 5))
                x[0] = False
            else:
                x = rand(rng, dt, (3, 5), -2, 2)
            arg_case(name, kind, dt, x, [3, 5], -1, False, [3])
    for kind in ["argmax", "argmin"]:
        for dt in ["f32", "f16"]:
            name = f"{kind}_{dt}_nan"  # the first NaN wins
            x = rand(rng_of(name), dt, (3, 5))
            x[0, 3] = NAN
            x[1, 1] = NAN
            x[1, 4] = NAN
            x[2] = [INF, -INF, INF, -INF, 0.0]
            arg_case(name, kind, dt, x, [3, 5], 1, False, [3])
        name = f"{kind}_f64_keepdims_axis0"
        x = rand(rng_of(name), "f64", (4, 3))
        arg_case(name, kind, "f64", x, ["?", 3], 0, True, [1, 3])
        name = f"{kind}_i32_rank1"
        x = rand(rng_of(name), "i32", (7,), -3, 3)
        arg_case(name, kind, "i32", x, ["N"], 0, False, [])
        name = f"{kind}_f32_3d_sym"
        x = rand(rng_of(name), "f32", (2, 4, 3))
        arg_case(name, kind, "f32", x, ["B", "?", 3], -2, False, ["B", 3])
        name = f"{kind}_f32_empty_status"
        arg_case(name, kind, "f32", np.zeros((2, 0)), [2, "?"], 1, False, [2],
                 status=1, message=[kind, "empty"])
        name = f"{kind}_i8_empty_rows"  # an empty result is fine
        arg_case(name, kind, "i8", np.zeros((0, 3), dtype=np.int64), ["?", 3],
                 1, False, ["?"])


# --- softmax, log_softmax ----------------------------------------------------


def soft_case(name, op, dt, x, dims, axis, group="softmax"):
    ref = round_float(softmax_ref(x, axis, op == "log_softmax"), dt)
    S.add(name, op=op, dtype=dt, params=[("x", dt, dims)],
          results=[(dt, dims)], body=[f"%r = {op} %x {{axis = {axis}}}",
                                      "return %r"],
          inputs=[x], outputs=[ref], oracle=ORACLE["torch"], group=group)


def large_rows(dt, n=7):
    """Rows of magnitude 1e4: mixed, all -1e4, one large among -1e4."""
    mixed = [1e4, -1e4, 9999.0, 0.0, 5000.0, -1e4, 1e4, -9990.0]
    rows = [[mixed[i % len(mixed)] for i in range(n)],
            [-1e4] * n,
            [-1e4] * (n - 1) + [1e4],
            [1e4 - 8 * i for i in range(n)]]
    return round_float(np.array(rows), dt)


def gen_softmax():
    for op in ["softmax", "log_softmax"]:
        for dt in FLOATS:
            name = f"{op}_{dt}"
            x = rand(rng_of(name), dt, (3, 7), -5, 5)
            soft_case(name, op, dt, x, [3, 7], -1)
            name = f"{op}_{dt}_large"
            soft_case(name, op, dt, large_rows(dt), [4, 7], -1)
        for dt in ["f32", "f64"]:
            name = f"{op}_{dt}_axis0"
            x = rand(rng_of(name), dt, (4, 3), -5, 5)
            soft_case(name, op, dt, x, [4, "?"], 0)
        name = f"{op}_f32_dyn"
        x = rand(rng_of(name), "f32", (2, 5), -5, 5)
        soft_case(name, op, "f32", x, ["?", "?"], 1)
        name = f"{op}_bf16_3d_axis1"
        x = rand(rng_of(name), "bf16", (2, 3, 4), -5, 5)
        soft_case(name, op, "bf16", x, [2, "N", 4], -2)
        name = f"{op}_f16_rank1"
        x = rand(rng_of(name), "f16", (6,), -5, 5)
        soft_case(name, op, "f16", x, [6], 0)
        # A row of only -inf gives NaN (as NumPy); +inf and NaN rows too.
        name = f"{op}_f32_inf_nan_rows"
        x = np.array([[-INF, -INF, -INF], [1.0, -INF, 2.0], [1.0, INF, 2.0],
                      [NAN, 1.0, 2.0], [-0.0, 0.0, -0.0]])
        soft_case(name, op, "f32", x, [5, 3], -1)
        name = f"{op}_f32_size1_axis"
        x = rand(rng_of(name), "f32", (4, 1))
        soft_case(name, op, "f32", x, [4, 1], 1)
        # Size-0 operands are valid: no rows, or rows of no elements.
        soft_case(f"{op}_f32_size0_rows", op, "f32", np.zeros((0, 5)),
                  ["?", 5], -1)
        soft_case(f"{op}_f64_size0_axis", op, "f64", np.zeros((3, 0)),
                  [3, "?"], -1)


# --- layer_norm, rms_norm ----------------------------------------------------


def norm_case(name, op, dt, x, dims, g, b, pdims, axis, eps=None,
              status=0, message=None, group="norm", gshape_dims=None):
    attrs = f"axis = {axis}"
    if eps is not None:
        attrs += f", epsilon = {fmt(eps, 'f64')}"
    e = eps if eps is not None else (1e-5 if op == "layer_norm" else 1e-6)
    params = [("x", dt, dims), ("g", dt, gshape_dims or pdims)]
    inputs = [x, g]
    opnds = "%x, %g"
    if op == "layer_norm":
        params.append(("b", dt, gshape_dims or pdims))
        inputs.append(b)
        opnds += ", %b"
        ref = (lambda: layer_norm_ref(x, g, b, axis, e))
        oracle = ORACLE["torch"]
    else:
        ref = (lambda: rms_norm_ref(x, g, axis, e))
        oracle = "numpy-float64 formula (PyTorch 1.13 has no rms_norm)"
    S.add(name, op=op, dtype=dt, params=params, results=[(dt, dims)],
          body=[f"%r = {op} {opnds} {{{attrs}}}", "return %r"], inputs=inputs,
          outputs=None if status else [round_float(ref(), dt)],
          status=status, message=message, oracle=oracle, group=group)


def gen_norm():
    for op in ["layer_norm", "rms_norm"]:
        for dt in FLOATS:
            name = f"{op}_{dt}"
            rng = rng_of(name)
            x = rand(rng, dt, (3, 8), -3, 3)
            g, b = rand(rng, dt, (8,), 0.5, 2), rand(rng, dt, (8,), -1, 1)
            norm_case(name, op, dt, x, [3, 8], g, b, [8], -1)
            name = f"{op}_{dt}_trailing2"  # over the two last dims
            rng = rng_of(name)
            x = rand(rng, dt, (2, 3, 4), -3, 3)
            g, b = rand(rng, dt, (3, 4), 0.5, 2), rand(rng, dt, (3, 4), -1, 1)
            norm_case(name, op, dt, x, [2, 3, 4], g, b, [3, 4], 1)
            name = f"{op}_{dt}_large"  # magnitude 1e4: no NaN or inf
            rng = rng_of(name)
            x = np.concatenate([rand(rng, dt, (3, 8), -1e4, 1e4),
                                large_rows(dt, 8)[:3]])
            g, b = rand(rng, dt, (8,), 0.5, 2), rand(rng, dt, (8,), -1, 1)
            norm_case(name, op, dt, x, [6, 8], g, b, [8], -1)
        name = f"{op}_f32_eps_constant_rows"
        rng = rng_of(name)
        x = rand(rng, "f32", (3, 5))
        x[1] = 2.5  # variance 0: layer_norm gives %b there
        g, b = rand(rng, "f32", (5,), 0.5, 2), rand(rng, "f32", (5,), -1, 1)
        norm_case(name, op, "f32", x, [3, 5], g, b, [5], -1, eps=1e-3)
        name = f"{op}_f64_dyn"
        rng = rng_of(name)
        x = rand(rng, "f64", (4, 6))
        g, b = rand(rng, "f64", (6,), 0.5, 2), rand(rng, "f64", (6,), -1, 1)
        norm_case(name, op, "f64", x, ["N", "?"], g, b, ["?"], -1)
        name = f"{op}_f16_whole"  # axis 0: over the whole tensor
        rng = rng_of(name)
        x = rand(rng, "f16", (2, 3, 2))
        g, b = rand(rng, "f16", (2, 3, 2), 0.5, 2), \
            rand(rng, "f16", (2, 3, 2), -1, 1)
        norm_case(name, op, "f16", x, [2, 3, 2], g, b, [2, 3, 2], -3)
        name = f"{op}_f32_rank1"
        rng = rng_of(name)
        x = rand(rng, "f32", (9,))
        g, b = rand(rng, "f32", (9,), 0.5, 2), rand(rng, "f32", (9,), -1, 1)
        norm_case(name, op, "f32", x, [9], g, b, [9], 0)
        name = f"{op}_f32_size0_rows"
        rng = rng_of(name)
        g, b = rand(rng, "f32", (4,), 0.5, 2), rand(rng, "f32", (4,), -1, 1)
        norm_case(name, op, "f32", np.zeros((0, 4)), ["N", 4], g, b, [4], -1)
        name = f"{op}_f32_gamma_mismatch"
        rng = rng_of(name)
        x = rand(rng, "f32", (3, 5))
        g, b = rand(rng, "f32", (4,), 0.5, 2), rand(rng, "f32", (4,), -1, 1)
        norm_case(name, op, "f32", x, [3, "?"], g, b, ["?"], -1, status=1,
                  message=[f"{op}: dim 0 of operand 1 has size 4"])


# --- Layout: transpose, reshape, broadcast_to, concat, slice -----------------


def rand_any(rng, dt, shape):
    if dt == "i1":
        return rand(rng, dt, shape)
    if dt in INTS:
        return rand_full(rng, dt, shape)
    return rand(rng, dt, shape, -100, 100)


def layout_case(name, op, dt, params, inputs, results, stmt, outputs,
                status=0, message=None):
    S.add(name, op=op, dtype=dt, params=params, results=results,
          body=[stmt, "return %r"], inputs=inputs, outputs=outputs,
          status=status, message=message, tolerance="exact", oracle="numpy",
          group=op)


def lst(v):
    return "[" + ", ".join(str(e) for e in v) + "]"


def gen_transpose():
    for i, dt in enumerate(DTYPES):
        dims = [[2, 3, 4], ["?", 3, 4], [2, "N", 4], ["?", "?", "?"]][i % 4]
        name = f"transpose_{dt}"
        x = rand_any(rng_of(name), dt, (2, 3, 4))
        perm = [2, 0, 1]
        layout_case(name, "transpose", dt, [("x", dt, dims)], [x],
                    [(dt, [dims[p] for p in perm])],
                    f"%r = transpose %x {{perm = {lst(perm)}}}",
                    [np.transpose(x, perm)])
    extras = [
        ("neg_perm", "f32", (2, 3, 4), [2, 3, 4], [-1, -3, -2]),
        ("default", "i32", (3, 5), [3, 5], None),
        ("size0", "f16", (0, 3), ["?", 3], [1, 0]),
        ("rank1", "i8", (4,), [4], [0]),
        ("rank4", "bf16", (2, 1, 3, 2), [2, 1, 3, 2], [3, 1, 0, 2]),
    ]
    for tag, dt, shape, dims, perm in extras:
        name = f"transpose_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, shape)
        nperm = [p % len(shape) for p in perm] if perm is not None else \
            list(range(len(shape)))[::-1]
        attr = f" {{perm = {lst(perm)}}}" if perm is not None else ""
        layout_case(name, "transpose", dt, [("x", dt, dims)], [x],
                    [(dt, [dims[p] for p in nperm])],
                    f"%r = transpose %x{attr}", [np.transpose(x, nperm)])


def gen_reshape():
    for i, dt in enumerate(DTYPES):
        name = f"reshape_{dt}"
        x = rand_any(rng_of(name), dt, (2, 6))
        dims = [[2, 6], ["?", 6], ["N", "?"], ["?", "?"]][i % 4]
        layout_case(name, "reshape", dt, [("x", dt, dims)], [x], [(dt, [3, 4])],
                    "%r = reshape %x {shape = [3, 4]}", [x.reshape(3, 4)])
    extras = [
        # tag, dt, shape, dims, target, result dims, result shape
        ("infer", "f32", (2, 6), [2, 6], [4, -1], [4, 3], (4, 3)),
        ("sym", "i64", (3, 4), ["N", 4], ["N", 2, 2], ["N", 2, 2], (3, 2, 2)),
        ("flatten_dyn", "f16", (3, 4), ["?", 4], [-1], ["?"], (12,)),
        ("infer_sym", "bf16", (2, 6), ["N", 6], [-1, 3], ["?", 3], (4, 3)),
        ("rank0_to_1", "i8", (), [], [1], [1], (1,)),
        ("to_rank0", "f64", (1, 1), [1, 1], [], [], ()),
        ("size0", "i32", (0, 4), [0, 4], [-1, 2], [0, 2], (0, 2)),
        ("size0_dyn", "f32", (0, 4), ["?", 4], [-1, 2], ["?", 2], (0, 2)),
        ("dyn_to_static", "i1", (3, 4), ["?", "?"], [2, 6], [2, 6], (2, 6)),
        ("add_unit_dims", "f32", (6,), ["N"], [1, "N", 1], [1, "N", 1],
         (1, 6, 1)),
    ]
    for tag, dt, shape, dims, target, rdims, rshape in extras:
        name = f"reshape_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, shape)
        if x.size == 0:
            x = np.zeros(shape, dtype=x.dtype)
        layout_case(name, "reshape", dt, [("x", dt, dims)], [x], [(dt, rdims)],
                    f"%r = reshape %x {{shape = {lst(target)}}}",
                    [x.reshape(rshape)])
    for tag, dt, shape, dims, target, rdims, n in [
            ("count", "f32", (5,), ["?"], [2, 3], [2, 3], 5),
            ("infer_divide", "i32", (6,), ["?"], [-1, 4], ["?", 4], 6),
            ("sym", "f64", (2, 3), ["N", "?"], ["N", 2], ["N", 2], 6)]:
        name = f"reshape_mismatch_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, shape)
        layout_case(name, "reshape", dt, [("x", dt, dims)], [x], [(dt, rdims)],
                    f"%r = reshape %x {{shape = {lst(target)}}}", None,
                    status=1, message=["reshape", f"{n} elements"])
    # A static operand to a shape with another parameter's symbolic dim
    # (difftest reshape-static-to-symbolic-expand-shape: the expand_shape
    # verifier rejected it): B must be 1 at run time, else status 1.
    for tag, b, status in [("", 1, 0), ("_mismatch", 2, 1)]:
        name = f"reshape_static_to_sym{tag}_f32"
        rng = rng_of(name)
        n, x = rand(rng, "f32", (b,)), rand(rng, "f32", (6,))
        S.add(name, op="reshape", dtype="f32",
              params=[("n", "f32", ["B"]), ("x", "f32", [6])],
              results=[("f32", ["?", 6])],
              body=["%r = reshape %x {shape = [B, 6]}", "return %r"],
              inputs=[n, x], outputs=None if status else [x.reshape(1, 6)],
              status=status,
              message=["reshape", "6 elements", "12"] if status else None,
              tolerance="exact", oracle="numpy", group="reshape")


def gen_broadcast_to():
    for i, dt in enumerate(DTYPES):
        name = f"broadcast_to_{dt}"
        x = rand_any(rng_of(name), dt, (3, 1))
        dims = [[3, 1], ["?", 1], ["?", "?"], [3, "?"]][i % 4]
        layout_case(name, "broadcast_to", dt, [("x", dt, dims)], [x],
                    [(dt, [2, 3, 4])],
                    "%r = broadcast_to %x {shape = [2, 3, 4]}",
                    [np.broadcast_to(x, (2, 3, 4))])
    extras = [
        ("sym", "f32", (3, 1), ["N", 1], ["N", 4], (3, 4)),
        ("dyn_one_at_runtime", "i32", (1,), ["?"], [5], (5,)),
        ("dyn_same", "f16", (5,), ["?"], [2, 5], (2, 5)),
        ("rank0", "i64", (), [], [2, 2], (2, 2)),
        ("size0", "bf16", (0, 1), [0, 1], [0, 3], (0, 3)),
        ("same", "i1", (2, 3), [2, 3], [2, 3], (2, 3)),
    ]
    for tag, dt, shape, dims, target, rshape in extras:
        name = f"broadcast_to_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, shape)
        if x.size == 0:
            x = np.zeros(shape, dtype=x.dtype)
        layout_case(name, "broadcast_to", dt, [("x", dt, dims)], [x],
                    [(dt, target)],
                    f"%r = broadcast_to %x {{shape = {lst(target)}}}",
                    [np.broadcast_to(x, rshape)])
    name = "broadcast_to_mismatch_f32"
    x = rand_any(rng_of(name), "f32", (3,))
    layout_case(name, "broadcast_to", "f32", [("x", "f32", ["?"])], [x],
                [("f32", [4])], "%r = broadcast_to %x {shape = [4]}", None,
                status=1, message=["broadcast_to: dim 0", "size 3"])


def gen_concat():
    for i, dt in enumerate(DTYPES):
        name = f"concat_{dt}"
        rng = rng_of(name)
        a, b = rand_any(rng, dt, (2, 3)), rand_any(rng, dt, (1, 3))
        da, db, dr = [([2, 3], [1, 3], [3, 3]), (["?", 3], [1, 3], ["?", 3]),
                      (["?", "?"], ["?", "?"], ["?", "?"]),
                      ([2, "N"], [1, "N"], [3, "N"])][i % 4]
        layout_case(name, "concat", dt, [("a", dt, da), ("b", dt, db)], [a, b],
                    [(dt, dr)], "%r = concat %a, %b {axis = 0}",
                    [np.concatenate([a, b], 0)])
    extras = [
        # tag, dt, shapes, dims, axis, result dims
        ("three_neg_axis", "f32", [(2, 1), (2, 3), (2, 2)],
         [[2, 1], [2, 3], [2, 2]], -1, [2, 6]),
        ("size0", "i32", [(0, 3), (2, 3)], [["?", 3], [2, 3]], 0, ["?", 3]),
        ("sym", "f16", [(3, 2), (3, 3)], [["N", 2], ["N", 3]], 1, ["N", 5]),
        ("rank1", "i1", [(3,), (4,)], [[3], ["?"]], 0, ["?"]),
        ("rank3_axis1", "bf16", [(2, 1, 2), (2, 2, 2)],
         [[2, 1, 2], [2, 2, 2]], 1, [2, 3, 2]),
        ("single", "i64", [(2, 2)], [[2, 2]], 0, [2, 2]),
    ]
    for tag, dt, shapes, dims, axis, rdims in extras:
        name = f"concat_{tag}_{dt}"
        rng = rng_of(name)
        xs = []
        for s in shapes:
            v = rand_any(rng, dt, s)
            xs.append(v if v.size else np.zeros(s, dtype=v.dtype))
        names = [f"x{k}" for k in range(len(xs))]
        layout_case(name, "concat", dt,
                    [(n, dt, d) for n, d in zip(names, dims)], xs, [(dt, rdims)],
                    f"%r = concat {', '.join('%' + n for n in names)} "
                    f"{{axis = {axis}}}", [np.concatenate(xs, axis)])
    for tag, dt, sa, da, sb, db, rdims in [
            ("dyn", "f32", (2, 3), ["?", "?"], (2, 4), ["?", "?"], ["?", "?"]),
            ("static_vs_dyn", "i8", (2, 3), ["?", 3], (1, 4), [1, "?"],
             ["?", 3])]:
        name = f"concat_mismatch_{tag}_{dt}"
        rng = rng_of(name)
        layout_case(name, "concat", dt, [("a", dt, da), ("b", dt, db)],
                    [rand_any(rng, dt, sa), rand_any(rng, dt, sb)],
                    [(dt, rdims)], "%r = concat %a, %b {axis = 0}", None,
                    status=1,
                    message=["concat: dim 1 of operand 1 has size 4"])


def slice_dims(shape, dims, start, stop, step):
    out = []
    for n, d, a, b, c in zip(shape, dims, start, stop, step):
        out.append(len(range(n)[a:b:c]) if isinstance(d, int) else "?")
    return out


def gen_slice():
    for i, dt in enumerate(DTYPES):
        name = f"slice_{dt}"
        x = rand_any(rng_of(name), dt, (5, 6))
        dims = [[5, 6], ["?", 6], ["N", "?"], ["?", "?"]][i % 4]
        start, stop, step = [1, 0], [4, 6], [1, 2]
        layout_case(name, "slice", dt, [("x", dt, dims)], [x],
                    [(dt, slice_dims((5, 6), dims, start, stop, step))],
                    f"%r = slice %x {{start = {lst(start)}, stop = "
                    f"{lst(stop)}, step = {lst(step)}}}",
                    [x[1:4, 0:6:2]])
    extras = [
        # tag, dt, shape, dims, start, stop, step (None: omitted)
        ("reverse", "f32", (7,), [7], [-1], [-100], [-1]),
        ("negative_bounds", "i32", (7,), [7], [-3], [-1], [1]),
        ("clamp", "f64", (4, 5), [4, 5], [-100, 2], [100, 100], [1, 3]),
        ("empty", "i8", (6,), [6], [4], [2], [1]),
        ("neg_step2", "f16", (6,), [6], [5], [0], [-2]),
        ("dyn_mixed", "bf16", (6, 5), ["?", "?"], [1, -1], [100, -100],
         [2, -2]),
        ("sym", "i64", (4, 3), ["N", 3], [1, 0], [-1, 3], [1, 1]),
        ("default_step", "i1", (3, 4), [3, 4], [0, 1], [2, 3], None),
        ("size0_input", "f32", (0, 3), ["?", 3], [0, 1], [5, 3], [1, 1]),
        ("rank3", "i32", (2, 3, 4), [2, 3, 4], [0, 2, 3], [2, -4, 0],
         [1, -1, -1]),
        ("dyn_empty", "f32", (3,), ["?"], [5], [10], [1]),
    ]
    for tag, dt, shape, dims, start, stop, step in extras:
        name = f"slice_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, shape)
        if x.size == 0:
            x = np.zeros(shape, dtype=x.dtype)
        st = step or [1] * len(shape)
        idx = tuple(slice(a, b, c) for a, b, c in zip(start, stop, st))
        attrs = f"start = {lst(start)}, stop = {lst(stop)}"
        if step:
            attrs += f", step = {lst(step)}"
        layout_case(name, "slice", dt, [("x", dt, dims)], [x],
                    [(dt, slice_dims(shape, dims, start, stop, st))],
                    f"%r = slice %x {{{attrs}}}", [x[idx]])


# --- gather ------------------------------------------------------------------


def gen_gather():
    for i, dt in enumerate(DTYPES):
        it = ["i64", "i32"][i % 2]
        name = f"gather_{dt}_{it}"
        rng = rng_of(name)
        t = rand_any(rng, dt, (5, 3))
        idx = rng.integers(-5, 5, (4,))
        idx[0] = 4
        idx[1] = -5
        tdims = [[5, 3], ["?", 3], ["N", "?"], ["?", "?"]][i % 4]
        layout_case(name, "gather", dt, [("t", dt, tdims), ("i", it, [4])],
                    [t, idx], [(dt, [4, tdims[1]])],
                    "%r = gather %t, %i {axis = 0}", [np.take(t, idx, axis=0)])
    extras = [
        # tag, dt, it, table shape, dims, idx shape, idx dims, axis
        ("axis1_idx2d", "f32", "i32", (4, 5), [4, 5], (2, 2), [2, 2], 1),
        ("neg_axis", "i64", "i64", (2, 3, 4), [2, 3, 4], (3,), ["?"], -1),
        ("idx_rank0", "f16", "i64", (5, 3), [5, 3], (), [], 0),
        ("idx_size0", "i8", "i32", (5, 3), ["?", 3], (0,), ["?"], 0),
        ("sym", "bf16", "i32", (6, 2), ["N", 2], (3, 2), ["M", 2], 0),
        ("repeat", "f64", "i64", (3,), [3], (7,), [7], 0),
    ]
    for tag, dt, it, ts, tdims, ish, idims, axis in extras:
        name = f"gather_{tag}_{dt}"
        rng = rng_of(name)
        t = rand_any(rng, dt, ts)
        n = ts[axis]
        idx = rng.integers(-n, n, ish) if ish else np.array(-1)
        if idx.size and not np.any(idx):
            idx.flat[0] = n - 1
        if idx.size == 0:
            idx = np.zeros(ish, dtype=np.int64)
        ax = axis % len(ts)
        rdims = list(tdims[:ax]) + list(idims) + list(tdims[ax + 1:])
        layout_case(name, "gather", dt, [("t", dt, tdims), ("i", it, idims)],
                    [t, idx], [(dt, rdims)],
                    f"%r = gather %t, %i {{axis = {axis}}}",
                    [np.take(t, idx, axis=ax)])
    for tag, it, bad in [("high", "i64", 5), ("low", "i32", -6),
                         ("far", "i64", 1 << 40)]:
        name = f"gather_out_of_range_{tag}_f32"
        rng = rng_of(name)
        t = rand_any(rng, "f32", (5, 3))
        idx = np.array([1, bad, 0], dtype=np.int64)
        layout_case(name, "gather", "f32", [("t", "f32", ["?", 3]),
                                            ("i", it, [3])],
                    [t, idx], [("f32", [3, 3])],
                    "%r = gather %t, %i {axis = 0}", None, status=1,
                    message=[f"gather: index {bad} is out of range"])


# --- call --------------------------------------------------------------------


def gen_call():
    name = "call_private_sym_f32"
    x = rand(rng_of(name), "f32", (5,))
    S.add(name, op="call", dtype="f32", params=[("x", "f32", ["N"])],
          results=[("f32", ["N"])],
          helper=(f"private func @{name}__sq(%x: f32[M]) -> f32[M] {{\n"
                  "  %r = mul %x, %x\n  return %r\n}"),
          body=[f"%r = call @{name}__sq(%x)", "return %r"], inputs=[x],
          outputs=[round_float(x * x, "f32")], group="call")
    name = "call_static_param_mismatch_i32"
    x = rand(rng_of(name), "i32", (5,))
    S.add(name, op="call", dtype="i32", params=[("x", "i32", ["?"])],
          results=[("i32", [4])],
          helper=(f"private func @{name}__neg(%x: i32[4]) -> i32[4] {{\n"
                  "  %r = neg %x\n  return %r\n}"),
          body=[f"%r = call @{name}__neg(%x)", "return %r"], inputs=[x],
          status=1, message=[f"call @{name}__neg", "has size 5"],
          group="call")
    name = "call_two_results_f64"
    rng = rng_of(name)
    a, b = rand(rng, "f64", (2, 3)), rand(rng, "f64", (3,))
    S.add(name, op="call", dtype="f64",
          params=[("a", "f64", [2, 3]), ("b", "f64", [3])],
          results=[("f64", [2, 3]), ("f64", [2, 3])],
          helper=(f"private func @{name}__both(%a: f64[2, 3], %b: f64[3]) -> "
                  "(f64[2, 3], f64[2, 3]) {\n  %s = add %a, %b\n"
                  "  %d = sub %a, %b\n  return %s, %d\n}"),
          body=[f"%s, %d = call @{name}__both(%a, %b)", "return %s, %d"],
          inputs=[a, b], outputs=[a + b, a - b], group="call")


# --- Several statements ------------------------------------------------------


def gen_composite():
    """Chains of ops (fusion must not change what each statement computes):
    the reference rounds every statement's result to its type."""
    f32 = lambda v: round_float(v, "f32")  # noqa: E731
    name = "composite_mlp_f32"
    rng = rng_of(name)
    x, w1 = rand(rng, "f32", (5, 8)), rand(rng, "f32", (8, 6), -1, 1)
    b1, w2 = rand(rng, "f32", (6,), -1, 1), rand(rng, "f32", (6, 4), -1, 1)
    b2 = rand(rng, "f32", (4,), -1, 1)
    a = f32(ref_gelu(f32(f32(x @ w1) + b1)))
    p = f32(softmax_ref(f32(f32(a @ w2) + b2), -1, True))
    S.add(name, op="composite", dtype="f32",
          params=[("x", "f32", ["N", 8]), ("w1", "f32", [8, 6]),
                  ("b1", "f32", [6]), ("w2", "f32", [6, 4]),
                  ("b2", "f32", [4])],
          results=[("f32", ["N", 4])],
          body=["%h = matmul %x, %w1", "%h1 = add %h, %b1", "%a = gelu %h1",
                "%l = matmul %a, %w2 : f32[N, 4]", "%l1 = add %l, %b2",
                "%p = log_softmax %l1 {axis = -1}", "return %p"],
          inputs=[x, w1, b1, w2, b2], outputs=[p], oracle=ORACLE["torch"],
          group="composite")

    name = "composite_stretch_chain_f64"
    rng = rng_of(name)
    a, b = rand(rng, "f64", (3, 1), -1, 1), rand(rng, "f64", (1, 4), -1, 1)
    t = np.exp((a + b) * a) - 1.0
    r = np.sum(t, axis=1, keepdims=True)
    S.add(name, op="composite", dtype="f64",
          params=[("a", "f64", ["?", 1]), ("b", "f64", [1, "?"])],
          results=[("f64", ["?", "?"]), ("f64", ["?", 1])],
          body=["%s = add %a, %b", "%m = mul %s, %a", "%e = exp %m",
                "%t = sub %e, 1.0",
                "%r = reduce_sum %t {axes = [1], keepdims = true}",
                "%q = div %t, %r", "return %q, %r"],
          inputs=[a, b], outputs=[t / r, r], group="composite")

    name = "composite_attention_f32"
    rng = rng_of(name)
    q, k, v = (rand(rng, "f32", (2, 3, 4), -1, 1) for _ in range(3))
    sc = f32(f32(np.matmul(q, np.transpose(k, (0, 2, 1)))) * 0.5)
    o = f32(np.matmul(f32(softmax_ref(sc, -1, False)), v))
    S.add(name, op="composite", dtype="f32",
          params=[("q", "f32", ["B", "T", 4]), ("k", "f32", ["B", "T", 4]),
                  ("v", "f32", ["B", "T", 4])],
          results=[("f32", ["B", "T", 4])],
          body=["%kt = transpose %k {perm = [0, 2, 1]}",
                "%s = matmul %q, %kt", "%s2 = mul %s, 0.5",
                "%p = softmax %s2 {axis = -1}", "%o = matmul %p, %v",
                "return %o"],
          inputs=[q, k, v], outputs=[o], oracle=ORACLE["torch"],
          group="composite")

    name = "composite_int_pipeline_f32"
    rng = rng_of(name)
    x = rand(rng, "f32", (10,), -50, 50)
    i = ref_cast(x, "f32", "i32")
    m = ref_binary("mod", i, np.array(7), "i32")
    z = np.where(m > 3, m, -1)
    S.add(name, op="composite", dtype="i32", params=[("x", "f32", ["?"])],
          results=[("i32", ["?"]), ("i32", []), ("i64", [])],
          body=["%i = cast %x {to = i32}", "%m = mod %i, 7",
                "%c = gt %m, 3", "%z = select %c, %m, -1",
                "%s = reduce_sum %z {axes = []}",
                "%n = argmax %z {axis = 0}", "return %z, %s, %n"],
          inputs=[x], outputs=[z, np.array(z.sum()), np.array(np.argmax(z))],
          oracle="python-int", group="composite")

    name = "composite_bf16_via_f32"
    rng = rng_of(name)
    x, g = rand(rng, "bf16", (2, 8)), rand(rng, "f32", (8,), 0.5, 2)
    n = round_float(f32(rms_norm_ref(x, g, -1, 1e-6)), "bf16")
    S.add(name, op="composite", dtype="bf16",
          params=[("x", "bf16", [2, 8]), ("g", "f32", [8])],
          results=[("bf16", [2, 8])],
          body=["%f = cast %x {to = f32}", "%n = rms_norm %f, %g {axis = -1}",
                "%b = cast %n {to = bf16}", "return %b"],
          inputs=[x, g], outputs=[n], group="composite")

    # Each f16 statement rounds to f16: a*b rounds 1 + 2^-9 + 2^-20 to
    # 1 + 2^-9, so subtracting that gives exactly 0 (an f32 intermediate
    # kept across the statements would leave 2^-20).
    name = "composite_f16_rounds_each_statement"
    one = 1 + 2.0 ** -10
    a = np.array([one, 3.0, -one, 1.5])
    c = round_float(round_float(a * a, "f16"), "f16")
    S.add(name, op="composite", dtype="f16",
          params=[("a", "f16", [4]), ("c", "f16", [4])],
          results=[("f16", [4])],
          body=["%y = mul %a, %a", "%z = sub %y, %c", "return %z"],
          inputs=[a, c], outputs=[np.zeros(4)], tolerance="exact",
          group="composite")

    # One value used as both operands and by several statements.
    name = "composite_shared_operand_f32"
    x = rand(rng_of(name), "f32", (2, 3))
    sq = f32(x * x)
    S.add(name, op="composite", dtype="f32", params=[("x", "f32", ["?", "?"])],
          results=[("f32", ["?", "?"]), ("f32", ["?", "?"])],
          body=["%s = mul %x, %x", "%t = add %s, %x", "%u = sub %s, %s",
                "return %t, %u"],
          inputs=[x], outputs=[f32(sq + x), f32(sq - sq)], group="composite")

    # An annotation that refines `?` is checked at run time, as is a result
    # dim the signature fixes.
    for tag, rows, status in [("ok", 3, 0), ("mismatch", 2, 1)]:
        name = f"annotation_refines_{tag}_f32"
        rng = rng_of(name)
        a, b = rand(rng, "f32", (rows, 4)), rand(rng, "f32", (4,))
        S.add(name, op="annotation", dtype="f32",
              params=[("a", "f32", ["?", 4]), ("b", "f32", [4])],
              results=[("f32", [3, 4])],
              body=["%r = add %a, %b : f32[3, 4]", "return %r"],
              inputs=[a, b], outputs=[f32(a + b)] if status == 0 else None,
              status=status, message=["has size 2"], group="composite")
    for tag, n, status in [("ok", 4, 0), ("mismatch", 5, 1)]:
        name = f"return_dim_checked_{tag}_i64"
        x = rand_full(rng_of(name), "i64", (n,))
        S.add(name, op="return", dtype="i64", params=[("x", "i64", ["?"])],
              results=[("i64", [4])], body=["%r = neg %x", "return %r"],
              inputs=[x], outputs=[int_unary("neg", x, "i64")]
              if status == 0 else None, status=status,
              message=["return: dim 0 of result 0 has size 5"],
              oracle="python-int", group="composite")

    # Literals: an integer literal on floats, compare with a literal, pow
    # with integral exponents of negative bases.
    for dt in FLOATS:
        name = f"pow_{dt}_negative_base_integral_exponent"
        rng = rng_of(name)
        a = rand(rng, dt, (3, 4), -3, 3)
        e = round_float(rng.integers(-3, 5, (3, 4)).astype(float), dt)
        binary_case(name, "pow", dt, a, [3, 4], e, [3, 4], [3, 4],
                    "composite")
        name = f"mul_{dt}_int_literal"
        a = rand(rng_of(name), dt, (5,))
        binary_case(name, "mul", dt, a, [5], np.array(3.0), None, [5],
                    "composite", lit=("right", 3))
    # C's pow special cases (every base against every exponent, 24 lanes
    # wide so the vector loop and its scalar rest both see them): +-0,
    # +-1, +-inf, NaN bases; odd and even integers (2^24 - 1 the largest
    # odd f32), halves, infinite and NaN exponents; overflow, underflow and
    # subnormal results.
    for dt in ["f32", "f64"]:
        name = f"pow_{dt}_special_values"
        tiny = float_min_subnormal(dt)
        big = float_max(dt)
        bases = round_float(np.array(
            [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5,
             3.0, -3.0, tiny, -tiny, big, -big, 1e-3, 10.0, -10.0]), dt)
        exps = round_float(np.array(
            [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, INF,
             -INF, NAN, 16777215.0, -16777215.0, 16777216.0, 1e10, 127.0,
             -149.0, 2.5, 0.75, -7.0, 1e-3, 0.1]), dt)
        binary_case(name, "pow", dt, bases.reshape(-1, 1), [len(bases), 1],
                    exps.reshape(1, -1), [1, len(exps)],
                    [len(bases), len(exps)], "composite")
    for dt in ["f32", "i8", "bf16"]:
        name = f"gt_{dt}_literal"
        rng = rng_of(name)
        a = rand(rng, dt, (6,), -3, 3)
        lit = 1 if dt == "i8" else 0.5
        S.add(name, op="gt", dtype=dt, params=[("a", dt, [6])],
              results=[("i1", [6])],
              body=[f"%r = gt %a, {fmt(lit, dt)}", "return %r"], inputs=[a],
              outputs=[a > lit], group="composite")


# --- Results that alias arguments or each other ------------------------------


def gen_results():
    """Results are buffers the caller owns and frees one by one (kina-run
    frees each with runtime_free and checks for leaks): also when the
    function returns an argument, a value twice, or an op that folds away."""
    cases = [
        # name, dt, dims, shape, body, results, outputs(x)
        ("result_is_argument_f32", "f32", ["?", 3], (2, 3), ["return %x"],
         1, lambda x: [x]),
        ("result_argument_twice_i64", "i64", [4], (4,), ["return %x, %x"], 2,
         lambda x: [x, x]),
        ("result_value_twice_i32", "i32", [2, 2], (2, 2),
         ["%r = neg %x", "return %r, %r"], 2,
         lambda x: [int_unary("neg", x, "i32")] * 2),
        ("result_constant_twice_bf16", "bf16", [3], (3,),
         ["%c = constant 1.5 : bf16[3]", "%r = add %x, %c",
          "return %c, %r, %c"], 3,
         lambda x: [np.full(3, 1.5), ref_binary("add", x, 1.5, "bf16"),
                    np.full(3, 1.5)]),
        ("result_transpose_identity_f16", "f16", [2, 3], (2, 3),
         ["%r = transpose %x {perm = [0, 1]}", "return %r"], 1,
         lambda x: [x]),
        ("result_reshape_same_f64", "f64", ["N", 2], (3, 2),
         ["%r = reshape %x {shape = [N, 2]}", "return %r, %x"], 2,
         lambda x: [x, x]),
        ("result_slice_full_i8", "i8", [5], (5,),
         ["%r = slice %x {start = [0], stop = [5], step = [1]}",
          "return %r"], 1, lambda x: [x]),
        ("result_cast_same_i1", "i1", [2, 2], (2, 2),
         ["%r = cast %x {to = i1}", "return %x, %r"], 2, lambda x: [x, x]),
        ("result_broadcast_same_f32", "f32", [], (),
         ["%r = broadcast_to %x {shape = []}", "return %r"], 1,
         lambda x: [x]),
    ]
    for name, dt, dims, shape, body, n, outs in cases:
        x = rand_any(rng_of(name), dt, shape) if shape else np.array(-0.75)
        S.add(name, op="return", dtype=dt, params=[("x", dt, dims)],
              results=[(dt, dims)] * n, body=body, inputs=[x],
              outputs=outs(x), tolerance="exact", oracle="numpy",
              group="results")


# --- Edge shapes: rank 0, size-0 dims next to dynamic ones, rank 8 ------------


def gen_rank0():
    """Every op at rank 0 where the spec allows it (a rank-0 tensor is a
    scalar, as NumPy's 0-d arrays)."""
    g = "rank0"
    for op, (f, (lo, hi), oracle, tol) in UNARY_FLOAT.items():
        kop = "gelu" if op == "gelu_tanh" else op
        attrs = ' {approximate = "tanh"}' if op == "gelu_tanh" else ""
        name = f"{op}_f32_rank0"
        x = np.array(rand(rng_of(name), "f32", (1,), lo, hi)[0])
        S.add(name, op=kop, dtype="f32", params=[("x", "f32", [])],
              results=[("f32", [])],
              body=[f"%r = {kop} %x{attrs}", "return %r"], inputs=[x],
              outputs=[round_float(fcall(f, x), "f32")],
              oracle=ORACLE[oracle], tolerance=tol, group=g)
    for dt in ["i64", "i8"]:
        for op in ["neg", "abs"]:
            name = f"{op}_{dt}_rank0"
            x = np.array(int_range(dt)[0])
            S.add(name, op=op, dtype=dt, params=[("x", dt, [])],
                  results=[(dt, [])], body=[f"%r = {op} %x", "return %r"],
                  inputs=[x], outputs=[int_unary(op, x, dt)],
                  oracle="python-int", group=g)
    for di, dt in enumerate(NUMERIC):
        for op in BINARY_OPS:
            name = f"{op}_{dt}_rank0"
            a, b = binary_inputs(rng_of(name), op, dt, (1,), (1,))
            binary_case(name, op, dt, a.reshape(()), [], b.reshape(()), [],
                        [], g)
    for op in ["add", "mul", "max", "min"]:
        binary_case(f"{op}_i1_rank0", op, "i1", np.array(True), [],
                    np.array(True), [], [], g)
    name = "add_f32_rank0_literal"
    binary_case(name, "add", "f32", np.array(1.5), [], np.array(0.1), None,
                [], g, lit=("right", 0.1))
    for dt in ["f64", "i32", "bf16"]:
        for op, f in COMPARE.items():
            name = f"{op}_{dt}_rank0"
            S.add(name, op=op, dtype=dt,
                  params=[("a", dt, []), ("b", dt, [])],
                  results=[("i1", [])],
                  body=[f"%r = {op} %a, %b", "return %r"],
                  inputs=[np.array(2.0 if is_float(dt) else 2),
                          np.array(-1.5 if is_float(dt) else -1)],
                  outputs=[f(2, -1)], group=g)
    for dt in DTYPES:
        name = f"select_{dt}_rank0"
        rng = rng_of(name)
        a, b = rand_any(rng, dt, (1,)).reshape(()), \
            rand_any(rng, dt, (1,)).reshape(())
        S.add(name, op="select", dtype=dt,
              params=[("c", "i1", []), ("a", dt, []), ("b", dt, [])],
              results=[(dt, [])],
              body=["%r = select %c, %a, %b", "return %r"],
              inputs=[np.array(True), a, b], outputs=[a],
              tolerance="exact", oracle="numpy", group=g)
        S.add(name + "_false", op="select", dtype=dt,
              params=[("a", dt, []), ("b", dt, [])], results=[(dt, [])],
              body=["%r = select false, %a, %b", "return %r"],
              inputs=[a, b], outputs=[b], tolerance="exact", oracle="numpy",
              group=g)
    for src in DTYPES:
        for dst in DTYPES:
            if src == dst:
                continue
            name = f"cast_{src}_to_{dst}_rank0"
            x = cast_inputs(rng_of(name), src, (1,)).reshape(())
            cast_case(name, src, dst, x, [], group=g)
    for kind, types in REDUCE_TYPES.items():
        for dt in types:
            for keep in [False, True]:
                name = f"reduce_{kind}_{dt}_all_rank0" + ("_keepdims" if keep
                                                      else "")
                x = rand_any(rng_of(name), dt, (1,)).reshape(())
                reduce_case(name, kind, dt, x, [], [], keep, [], group=g)
    # The scalar a rank-0 reduction gives, broadcast by the op that reads
    # it: each result element must see it once (difftest's
    # select-scalar-reduce-sum-wrong-result: fused into the select, the sum
    # was accumulated once per element, 3.75 read as 7.5, 11.25, ...).
    for kind, types in REDUCE_TYPES.items():
        for di, dt in enumerate(types):
            name = f"reduce_{kind}_{dt}_rank0_broadcast"
            rng = rng_of(name)
            x = rand_any(rng, dt, (1,)).reshape(())
            c = rand(rng, "i1", (2, 3))
            y = rand_any(rng, dt, (3,))
            attrs = " {axes = [], keepdims = true}" if di % 2 else ""
            r = reduce_ref(kind, x, [], False, dt)
            S.add(name, op=f"reduce_{kind}", dtype=dt,
                  params=[("x", dt, []), ("c", "i1", [2, 3]),
                          ("y", dt, [3])],
                  results=[(dt, [2, 3])],
                  body=[f"%r = reduce_{kind} %x{attrs}",
                        "%s = select %c, %y, %r", "return %s"],
                  inputs=[x, c, y],
                  outputs=[np.where(c, y, np.asarray(r, dtype=y.dtype))],
                  tolerance="exact",
                  oracle="numpy-float64" if is_float(dt) else "python-int",
                  group=g)
    for dt in DTYPES:
        for attr in [" {perm = []}", ""]:
            name = f"transpose_{dt}_rank0" + ("_default" if not attr else "")
            x = rand_any(rng_of(name), dt, (1,)).reshape(())
            layout_case(name, "transpose", dt, [("x", dt, [])], [x],
                        [(dt, [])], f"%r = transpose %x{attr}", [x])
        name = f"slice_{dt}_rank0"
        x = rand_any(rng_of(name), dt, (1,)).reshape(())
        layout_case(name, "slice", dt, [("x", dt, [])], [x], [(dt, [])],
                    "%r = slice %x {start = [], stop = [], step = []}", [x])
    for tag, dt, target, rdims in [
            ("same", "f32", [], []), ("infer", "i64", [-1], ["?"]),
            ("to_3d", "bf16", [1, 1, 1], [1, 1, 1]),
            ("infer_3d", "f16", [1, -1, 1], [1, "?", 1])]:
        name = f"reshape_rank0_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, (1,)).reshape(())
        layout_case(name, "reshape", dt, [("x", dt, [])], [x], [(dt, rdims)],
                    f"%r = reshape %x {{shape = {lst(target)}}}",
                    [x.reshape([1 if t == -1 else t for t in target])])
    for tag, dt, target in [("same", "i8", []), ("size0", "f32", [0, 3]),
                            ("rank8", "i32", [1, 2, 1, 2, 1, 2, 1, 2])]:
        name = f"broadcast_to_rank0_{tag}_{dt}"
        x = rand_any(rng_of(name), dt, (1,)).reshape(())
        layout_case(name, "broadcast_to", dt, [("x", dt, [])], [x],
                    [(dt, target)],
                    f"%r = broadcast_to %x {{shape = {lst(target)}}}",
                    [np.broadcast_to(x, target)])
    # A scalar chain through bf16 (the cast row: each cast rounds once).
    name = "cast_chain_i64_f32_bf16"
    x = np.array([3, -7, 2 ** 30 + 2 ** 22 + 1, -(2 ** 62)], dtype=np.int64)
    S.add(name, op="cast", dtype="i64", params=[("x", "i64", ["?"])],
          results=[("bf16", ["?"])],
          body=["%a = cast %x {to = f32}", "%b = cast %a {to = bf16}",
                "return %b"], inputs=[x],
          outputs=[round_float(ref_cast(x, "i64", "f32"), "bf16")],
          tolerance="exact", oracle="spec (numpy-float64, python-int)",
          group="cast_edges")
    for src in ["i32", "i8", "i1", "f16"]:
        name = f"cast_chain_{src}_f32_bf16_rank0"
        x = np.array(True) if src == "i1" else np.array(-7)
        S.add(name, op="cast", dtype=src, params=[("x", src, [])],
              results=[("bf16", [])],
              body=["%a = cast %x {to = f32}", "%b = cast %a {to = bf16}",
                    "return %b"], inputs=[x],
              outputs=[round_float(ref_cast(x, src, "f32"), "bf16")],
              tolerance="exact", oracle="spec (numpy-float64, python-int)",
              group="cast_edges")


def gen_zero_dims():
    """Shapes with a static 0 next to dynamic or symbolic dims, also made by
    slice and broadcast_to, through reshape (no elements to move)."""
    g = "zero_dims"
    for tag, dt, shape, dims, target, rdims in [
            ("sym_zero_flat", "f32", (3, 0), ["N", 0], [-1], ["?"]),
            ("dyn_zero_flat", "i32", (3, 0), ["?", 0], [-1], ["?"]),
            ("dyn_zero_keep", "f16", (4, 0, 3, 1), ["N0", 0, 3, 1],
             ["N0", 0], ["N0", 0]),
            ("dyn_zero_infer", "bf16", (2, 0, 5), ["?", 0, "?"], [-1, 5],
             ["?", 5]),
            ("dyn_zero_to_static", "i8", (2, 0), ["?", 0], [0, 7], [0, 7]),
            ("zero_to_dyn_zero", "f64", (0, 4), [0, 4], ["N", 0, 2],
             ["N", 0, 2])]:
        name = f"reshape_{tag}_{dt}"
        params = [("x", dt, dims)]
        x = np.zeros(shape, dtype=bool if dt == "i1" else np.float64
                     if is_float(dt) else np.int64)
        inputs = [x]
        rshape = [0 if t == -1 else t for t in target]
        if "N" in target:  # bind N by a second argument
            params.append(("n", "i64", ["N"]))
            inputs.append(np.array([1, 2, 3], dtype=np.int64))
            rshape = [3 if t == "N" else t for t in target]
        elif "N0" in target:
            rshape = [shape[0] if t == "N0" else t for t in target]
        S.add(name, op="reshape", dtype=dt, params=params,
              results=[(dt, rdims)],
              body=[f"%r = reshape %x {{shape = {lst(target)}}}", "return %r"],
              inputs=inputs, outputs=[x.reshape(rshape)], tolerance="exact",
              oracle="numpy", group=g)
    name = "slice_then_reshape_f32"
    x = rand(rng_of(name), "f32", (3, 4))
    S.add(name, op="reshape", dtype="f32", params=[("x", "f32", ["N", 4])],
          results=[("f32", ["?"])],
          body=["%s = slice %x {start = [0, 2], stop = [100, 2]}",
                "%r = reshape %s {shape = [-1]}", "return %r"],
          inputs=[x], outputs=[x[:, 2:2].reshape(-1)], tolerance="exact",
          oracle="numpy", group=g)
    name = "broadcast_to_then_reshape_i64"
    x = rand_full(rng_of(name), "i64", (3, 1))
    S.add(name, op="reshape", dtype="i64", params=[("x", "i64", ["N", 1])],
          results=[("i64", ["?", 2])],
          body=["%b = broadcast_to %x {shape = [N, 0]}",
                "%r = reshape %b {shape = [-1, 2]}", "return %r"],
          inputs=[x], outputs=[np.zeros((0, 2), dtype=np.int64)],
          tolerance="exact", oracle="numpy", group=g)
    name = "broadcast_to_sym_zero_f16"
    x = rand(rng_of(name), "f16", (3, 1))
    S.add(name, op="broadcast_to", dtype="f16",
          params=[("x", "f16", ["N", 1])], results=[("f16", ["N", 0])],
          body=["%r = broadcast_to %x {shape = [N, 0]}", "return %r"],
          inputs=[x], outputs=[np.zeros((3, 0))], tolerance="exact",
          oracle="numpy", group=g)


RANK8 = (2, 1, 3, 1, 2, 1, 1, 2)


def gen_rank8():
    """The largest rank (8, docs/reliability.md), with size-1 dims that
    broadcast."""
    g = "rank8"
    # keepdims' unit dims must not be folded into the ops before the
    # reduction beyond rank 8 (difftest transpose-reduce-keepdims-rank9-alloc:
    # status 1, "rank 9 outside 0..8").
    for dt in ["bf16", "f32", "f64"]:
        name = f"reduce_sum_{dt}_keepdims_after_transpose"
        x = rand_any(rng_of(name), dt, (1, 5, 3, 3, 4))
        t = np.transpose(x)
        S.add(name, op="reduce_sum", dtype=dt,
              params=[("x", dt, [1, 5, 3, 3, 4])],
              results=[(dt, ["?", "?", "?", "?", "?"])],
              body=["%n = neg %x", "%t = transpose %n",
                    "%r = reduce_sum %t {axes = [1, 4, 2, 0], "
                    "keepdims = true}", "return %r"],
              inputs=[x],
              outputs=[reduce_ref("sum", -t, [0, 1, 2, 4], True, dt)],
              oracle="numpy-float64", group=g)
    dims = list(RANK8)
    ones = [1, 3, 1, 2, 1, 2, 1, 1]  # broadcasts against RANK8
    out = list(np.broadcast_shapes(RANK8, tuple(ones)))
    for op, dt in [("add", "f32"), ("mul", "i32"), ("max", "bf16"),
                   ("div", "f64"), ("min", "i1")]:
        name = f"{op}_{dt}_rank8"
        a, b = binary_inputs(rng_of(name), op, dt, RANK8, tuple(ones))
        binary_case(name, op, dt, a, dims, b, ones, out, g)
    name = "exp_f16_rank8"
    x = rand(rng_of(name), "f16", RANK8)
    S.add(name, op="exp", dtype="f16", params=[("x", "f16", ["?"] * 8)],
          results=[("f16", ["?"] * 8)], body=["%r = exp %x", "return %r"],
          inputs=[x], outputs=[round_float(np.exp(x), "f16")], group=g)
    name = "select_i8_rank8"
    rng = rng_of(name)
    c = rand(rng, "i1", tuple(ones))
    a, b = rand(rng, "i8", RANK8, -50, 50), rand(rng, "i8", (), -50, 50)
    S.add(name, op="select", dtype="i8",
          params=[("c", "i1", ones), ("a", "i8", dims), ("b", "i8", [])],
          results=[("i8", out)], body=["%r = select %c, %a, %b", "return %r"],
          inputs=[c, a, b], outputs=[np.where(c, a, b)], tolerance="exact",
          oracle="numpy", group=g)
    name = "lt_f32_rank8"
    rng = rng_of(name)
    a, b = rand(rng, "f32", RANK8), rand(rng, "f32", tuple(ones))
    S.add(name, op="lt", dtype="f32",
          params=[("a", "f32", dims), ("b", "f32", ones)],
          results=[("i1", out)], body=["%r = lt %a, %b", "return %r"],
          inputs=[a, b], outputs=[a < b], group=g)
    name = "cast_f32_to_i8_rank8"
    cast_case(name, "f32", "i8", cast_inputs(rng_of(name), "f32", RANK8),
              ["?"] * 8, group=g)
    for kind, dt, axes, keep in [("sum", "f32", [0, 2, 7], False),
                                 ("max", "i64", [], True),
                                 ("prod", "f64", [-1, 4], True),
                                 ("mean", "bf16", [1, 3, 5, 6], False)]:
        name = f"reduce_{kind}_{dt}_rank8"
        x = reduce_inputs(rng_of(name), kind, dt, RANK8)
        ax = [a % 8 for a in axes] if axes else list(range(8))
        rdims = [1 if i in ax else d for i, d in enumerate(dims)] if keep \
            else [d for i, d in enumerate(dims) if i not in ax]
        reduce_case(name, kind, dt, x, dims, axes, keep, rdims, group=g)
    name = "argmax_f32_rank8"
    x = round_float(rng_of(name).integers(-2, 3, RANK8) * 1.5, "f32")
    arg_case(name, "argmax", "f32", x, dims, 2, True,
             [1 if i == 2 else d for i, d in enumerate(dims)], group=g)
    name = "softmax_f32_rank8"
    x = rand(rng_of(name), "f32", RANK8)
    soft_case(name, "softmax", "f32", x, dims, -1, group=g)
    name = "layer_norm_f32_rank8"
    rng = rng_of(name)
    x = rand(rng, "f32", RANK8, -3, 3)
    gm, bt = rand(rng, "f32", RANK8[5:], 0.5, 2), \
        rand(rng, "f32", RANK8[5:], -1, 1)
    norm_case(name, "layer_norm", "f32", x, dims, gm, bt, dims[5:], 5,
              group=g)
    perm = [7, 0, 6, 1, 5, 2, 4, 3]
    name = "transpose_i32_rank8"
    x = rand_any(rng_of(name), "i32", RANK8)
    S.add(name, op="transpose", dtype="i32", params=[("x", "i32", dims)],
          results=[("i32", [dims[p] for p in perm])],
          body=[f"%r = transpose %x {{perm = {lst(perm)}}}", "return %r"],
          inputs=[x], outputs=[np.transpose(x, perm)], tolerance="exact",
          oracle="numpy", group=g)
    for tag, dt, target, rdims, rshape in [
            ("flatten", "f16", [-1], ["?"], (24,)),
            ("from_flat", "i64", list(RANK8), dims, RANK8)]:
        name = f"reshape_{tag}_{dt}_rank8"
        shape = (24,) if tag == "from_flat" else RANK8
        x = rand_any(rng_of(name), dt, shape)
        layout_case(name, "reshape", dt,
                    [("x", dt, ["?"] * len(shape))], [x], [(dt, rdims)],
                    f"%r = reshape %x {{shape = {lst(target)}}}",
                    [x.reshape(rshape)])
    name = "broadcast_to_f32_rank8"
    x = rand_any(rng_of(name), "f32", tuple(ones))
    layout_case(name, "broadcast_to", "f32", [("x", "f32", ones)], [x],
                [("f32", out)], f"%r = broadcast_to %x {{shape = {lst(out)}}}",
                [np.broadcast_to(x, out)])
    name = "slice_i8_rank8"
    x = rand_any(rng_of(name), "i8", RANK8)
    start, stop, step = [1, 0, -1, 0, 0, 0, 0, 1], [2, 1, -100, 1, 2, 1, 1, 2], \
        [1, 1, -2, 1, 1, 1, 1, 1]
    idx = tuple(slice(a, b, c) for a, b, c in zip(start, stop, step))
    layout_case(name, "slice", "i8", [("x", "i8", dims)], [x],
                [("i8", slice_dims(RANK8, dims, start, stop, step))],
                f"%r = slice %x {{start = {lst(start)}, stop = {lst(stop)}, "
                f"step = {lst(step)}}}", [x[idx]])
    name = "concat_bf16_rank8"
    rng = rng_of(name)
    a, b = rand_any(rng, "bf16", RANK8), rand_any(rng, "bf16", RANK8)
    layout_case(name, "concat", "bf16", [("a", "bf16", dims),
                                         ("b", "bf16", ["?"] * 8)], [a, b],
                [("bf16", dims[:3] + ["?"] + dims[4:])],
                "%r = concat %a, %b {axis = 3}", [np.concatenate([a, b], 3)])
    name = "matmul_f32_rank8"
    rng = rng_of(name)
    sa, sb = (2, 1, 1, 1, 1, 1, 3, 4), (1, 2, 1, 1, 1, 1, 4, 2)
    a, b = mm_inputs(rng, "f32", sa, sb)
    S.add(name, op="matmul", dtype="f32",
          params=[("a", "f32", list(sa)), ("b", "f32", list(sb))],
          results=[("f32", [2, 2, 1, 1, 1, 1, 3, 2])],
          body=["%r = matmul %a, %b", "return %r"], inputs=[a, b],
          outputs=[matmul_ref(a, b, "f32")], group=g)
    name = "error_rank9"
    S.add(name, op="compile_error", dtype="f32",
          params=[("x", "f32", [])], results=[("f32", [1] * 9)],
          body=["%r = broadcast_to %x {shape = [1, 1, 1, 1, 1, 1, 1, 1, 1]}",
                "return %r"], inputs=[],
          compile_error=(-1, ["rank 9", "maximum rank 8"]),
          group="compile_error")


# --- Compile errors (kinac exits 1 with a located message) -------------------

NEGATIVE = [
    # name, params, results, body (the first statement is the bad one),
    # texts the message must contain (what was expected, what was found)
    ("exp_i32", [("x", "i32", [4])], [("i32", [4])], ["%r = exp %x"],
     ["'exp' expects a float tensor", "i32[4]"]),
    ("gelu_i64", [("x", "i64", [4])], [("i64", [4])], ["%r = gelu %x"],
     ["'gelu' expects a float tensor", "i64[4]"]),
    ("not_f32", [("x", "f32", [4])], [("f32", [4])], ["%r = not %x"],
     ["'not' expects an i1 tensor", "f32[4]"]),
    ("neg_i1", [("x", "i1", [4])], [("i1", [4])], ["%r = neg %x"],
     ["'neg'", "i1[4]"]),
    ("sub_i1", [("a", "i1", [4]), ("b", "i1", [4])], [("i1", [4])],
     ["%r = sub %a, %b"], ["'sub' does not take i1", "i1[4]"]),
    ("pow_i1", [("a", "i1", [4]), ("b", "i1", [4])], [("i1", [4])],
     ["%r = pow %a, %b"], ["'pow' does not take i1", "i1[4]"]),
    ("add_f32_i32", [("a", "f32", [4]), ("b", "i32", [4])], [("f32", [4])],
     ["%r = add %a, %b"], ["same element type", "f32[4]", "i32[4]"]),
    ("add_i32_literal_half", [("a", "i32", [4])], [("i32", [4])],
     ["%r = add %a, 0.5"], ["0.5", "i32"]),
    ("add_static_mismatch", [("a", "f32", [3]), ("b", "f32", [4])],
     [("f32", [4])], ["%r = add %a, %b"],
     ["do not broadcast", "f32[3]", "f32[4]"]),
    ("reduce_mean_i32", [("x", "i32", [4])], [("i32", [])],
     ["%r = reduce_mean %x {axes = []}"],
     ["'reduce_mean' expects a float", "i32[4]"]),
    ("reduce_sum_i1", [("x", "i1", [4])], [("i1", [])],
     ["%r = reduce_sum %x {axes = []}"],
     ["'reduce_sum' does not take i1", "i1[4]"]),
    ("reduce_prod_i1", [("x", "i1", [4])], [("i1", [])],
     ["%r = reduce_prod %x {axes = []}"],
     ["'reduce_prod' does not take i1", "i1[4]"]),
    ("reduce_max_static_empty", [("x", "f32", [0, 3])], [("f32", [3])],
     ["%r = reduce_max %x {axes = [0]}"], ["'reduce_max'", "empty",
                                           "f32[0, 3]"]),
    ("argmax_static_empty", [("x", "f32", [2, 0])], [("i64", [2])],
     ["%r = argmax %x {axis = 1}"], ["'argmax'", "empty", "f32[2, 0]"]),
    ("softmax_i64", [("x", "i64", [4])], [("i64", [4])],
     ["%r = softmax %x {axis = -1}"], ["'softmax'", "i64[4]"]),
    ("log_softmax_i8", [("x", "i8", [4])], [("i8", [4])],
     ["%r = log_softmax %x {axis = -1}"], ["'log_softmax'", "i8[4]"]),
    ("layer_norm_i32", [("x", "i32", [2, 4]), ("g", "i32", [4]),
                        ("b", "i32", [4])], [("i32", [2, 4])],
     ["%r = layer_norm %x, %g, %b {axis = -1}"], ["'layer_norm'",
                                                  "i32[2, 4]"]),
    ("rms_norm_i1", [("x", "i1", [2, 4]), ("g", "i1", [4])], [("i1", [2, 4])],
     ["%r = rms_norm %x, %g {axis = -1}"], ["'rms_norm'", "i1[2, 4]"]),
    ("matmul_i1", [("a", "i1", [2, 3]), ("b", "i1", [3, 2])],
     [("i1", [2, 2])], ["%r = matmul %a, %b"],
     ["'matmul' does not take i1", "i1[2, 3]"]),
    ("matmul_static_k", [("a", "f32", [2, 3]), ("b", "f32", [4, 2])],
     [("f32", [2, 2])], ["%r = matmul %a, %b"],
     ["'matmul'", "f32[2, 3]", "f32[4, 2]"]),
    ("iota_i1", [], [("i1", [4])], ["%r = iota {axis = 0} : i1[4]"],
     ["'iota'", "i1[4]"]),
    ("gather_f32_index", [("t", "f32", [4]), ("i", "f32", [2])],
     [("f32", [2])], ["%r = gather %t, %i {axis = 0}"],
     ["'gather'", "i32 or i64", "f32[2]"]),
    ("select_f32_condition", [("c", "f32", [4]), ("a", "f32", [4])],
     [("f32", [4])], ["%r = select %c, %a, %a"], ["must be i1", "f32[4]"]),
    ("slice_step0", [("x", "f32", [4])], [("f32", [4])],
     ["%r = slice %x {start = [0], stop = [4], step = [0]}"],
     ["'slice'", "step"]),
    ("annotation_mismatch", [("x", "f32", [4])], [("f32", [4])],
     ["%r = exp %x : f16[4]"], ["f32[4]", "f16[4]"]),
    # Attributes out of range.
    ("reduce_axis_out_of_range", [("x", "f32", [2, 3])], [("f32", [2])],
     ["%r = reduce_sum %x {axes = [2]}"], ["'reduce_sum'", "axis 2",
                                           "f32[2, 3]"]),
    ("reduce_axis_twice", [("x", "f32", [2, 3])], [("f32", [3])],
     ["%r = reduce_sum %x {axes = [0, -2]}"], ["'reduce_sum'", "twice"]),
    ("transpose_not_permutation", [("x", "i32", [2, 3])], [("i32", [2, 3])],
     ["%r = transpose %x {perm = [0, 0]}"], ["'transpose'",
                                             "not a permutation"]),
    ("concat_axis_out_of_range", [("x", "f16", [2, 3])], [("f16", [2, 3])],
     ["%r = concat %x, %x {axis = 2}"], ["'concat'", "axis 2"]),
    ("softmax_axis_out_of_range", [("x", "f32", [2, 3])], [("f32", [2, 3])],
     ["%r = softmax %x {axis = -3}"], ["'softmax'", "axis -3"]),
    ("reshape_two_inferred", [("x", "i8", [2, 3])], [("i8", [3, 2])],
     ["%r = reshape %x {shape = [-1, -1]}"], ["'reshape'", "-1"]),
    ("reshape_static_count", [("x", "i8", [2, 3])], [("i8", [4, 2])],
     ["%r = reshape %x {shape = [4, 2]}"], ["'reshape'"]),
    ("broadcast_to_static_mismatch", [("x", "f32", [3])], [("f32", [2, 4])],
     ["%r = broadcast_to %x {shape = [2, 4]}"], ["'broadcast_to'"]),
    ("gelu_bad_approximate", [("x", "f32", [3])], [("f32", [3])],
     ['%r = gelu %x {approximate = "fast"}'], ["'gelu'", "tanh"]),
    # Ops that name an axis need one (rank >= 1); NumPy's concatenate and
    # matmul refuse 0-d arrays too.
    ("argmax_rank0", [("x", "f32", [])], [("i64", [])],
     ["%r = argmax %x {axis = 0}"], ["'argmax'", "axis 0", "rank 0"]),
    ("argmin_rank0", [("x", "i32", [])], [("i64", [])],
     ["%r = argmin %x {axis = -1}"], ["'argmin'", "axis -1", "rank 0"]),
    ("softmax_rank0", [("x", "f32", [])], [("f32", [])],
     ["%r = softmax %x {axis = -1}"], ["'softmax'", "axis -1", "rank 0"]),
    ("log_softmax_rank0", [("x", "f64", [])], [("f64", [])],
     ["%r = log_softmax %x {axis = 0}"], ["'log_softmax'", "rank 0"]),
    ("layer_norm_rank0", [("x", "f32", []), ("g", "f32", []),
                          ("b", "f32", [])], [("f32", [])],
     ["%r = layer_norm %x, %g, %b {axis = -1}"], ["'layer_norm'",
                                                  "rank 0"]),
    ("rms_norm_rank0", [("x", "f16", []), ("g", "f16", [])], [("f16", [])],
     ["%r = rms_norm %x, %g {axis = 0}"], ["'rms_norm'", "rank 0"]),
    ("concat_rank0", [("x", "f32", [])], [("f32", [])],
     ["%r = concat %x, %x {axis = 0}"], ["'concat'", "rank 0"]),
    ("gather_rank0_table", [("t", "f32", []), ("i", "i64", [])],
     [("f32", [])], ["%r = gather %t, %i {axis = 0}"], ["'gather'",
                                                       "rank 0"]),
    ("matmul_rank0", [("a", "f32", []), ("b", "f32", [])], [("f32", [])],
     ["%r = matmul %a, %b"], ["'matmul'", "rank >= 1", "f32[]"]),
    ("iota_rank0", [], [("i64", [])], ["%r = iota {axis = 0} : i64[]"],
     ["'iota'", "rank 0"]),
    ("reduce_axis_rank0", [("x", "f32", [])], [("f32", [])],
     ["%r = reduce_sum %x {axes = [0]}"], ["'reduce_sum'", "axis 0"]),
    ("transpose_rank0_perm", [("x", "f32", [])], [("f32", [])],
     ["%r = transpose %x {perm = [0]}"], ["'transpose'"]),
    ("slice_rank0_bounds", [("x", "f32", [])], [("f32", [])],
     ["%r = slice %x {start = [0], stop = [1]}"], ["'slice'"]),
]


def gen_negative():
    for tag, params, results, body, message in NEGATIVE:
        dt = params[0][1] if params else results[0][0]
        S.add(f"error_{tag}", op="compile_error", dtype=dt, params=params,
              results=results, body=body + ["return %r"], inputs=[],
              compile_error=(0, message), group="compile_error")


# --- Type Error (6): an input file's dtype differs from the manifest ---------

STATUS6 = [
    ("f32", "f64"), ("bf16", "f16"), ("f16", "bf16"), ("i1", "i8"),
    ("i64", "i32"), ("i8", "i1"), ("f64", "i64"), ("i32", "f32"),
]


def gen_status6():
    for want, have in STATUS6:
        name = f"type_error_{want}_given_{have}"
        rng = rng_of(name)
        x = rand(rng, have, (2, 3), -5, 5)
        S.add(name, op="kina-run", dtype=want,
              params=[("x", want, ["?", 3])], results=[(want, ["?", 3])],
              body=["%r = transpose %x {perm = [0, 1]}", "return %r"],
              inputs=[x], input_dtypes=[have], status=6,
              message=["in0.npy", f"'{NPY[want]}'",
                       f"but the file holds '{NPY[have]}'"],
              group="type_error")


# --- main --------------------------------------------------------------------


def self_test():
    """round_float must agree with NumPy's own f32 and f16 rounding, and
    the bf16 path with an independent rounding through float32 bits."""
    rng = np.random.default_rng(1)
    x = np.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-8, 8, 20000),
        np.ldexp(rng.uniform(1, 2, 20000), rng.integers(-160, 140, 20000)),
        float_edges("f64"), [65519.99, 65520.0, 3.4e38, 3.39e38, 1e-45]])
    x = np.concatenate([x, -x])
    with np.errstate(all="ignore"):
        for dt, npt in [("f32", np.float32), ("f16", np.float16)]:
            want = x.astype(npt).astype(np.float64)
            got = round_float(x, dt)
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all(), (dt, x[~same][:5], got[~same][:5])
        # bf16 from values exact in f32: nearest-even on the low 16 bits.
        f = x.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        r = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        want = (r.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        got = round_float(f.astype(np.float64), "bf16")
        same = (got == want) | (np.isnan(got) & np.isnan(f))
        assert same.all(), (f[~same][:5], got[~same][:5], want[~same][:5])


def generate():
    self_test()
    gen_unary()
    gen_binary()
    gen_broadcast()
    gen_compare()
    gen_select()
    gen_cast()
    gen_constant()
    gen_iota()
    gen_matmul()
    gen_reductions()
    gen_argmax()
    gen_softmax()
    gen_norm()
    gen_transpose()
    gen_reshape()
    gen_broadcast_to()
    gen_concat()
    gen_slice()
    gen_gather()
    gen_call()
    gen_composite()
    gen_results()
    gen_negative()
    gen_status6()
    gen_rank0()
    gen_zero_dims()
    gen_rank8()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "cases"),
                    help="folder to (re)write (default: cases/ here)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and compare "
                    "byte for byte with --out")
    args = ap.parse_args()
    if torch is None:
        sys.exit("generate.py: error: needs PyTorch (apt-get install "
                 "python3-torch); running the cases does not")
    torch.set_num_threads(1)
    # NaN from empty means and the like is expected, and asked for.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    generate()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            S.write(os.path.join(tmp, "cases"))
            cmp = filecmp.dircmp(args.out, os.path.join(tmp, "cases"))
            diffs = []

            def walk(c, path):
                diffs.extend(os.path.join(path, f) for f in
                             c.left_only + c.right_only + c.diff_files)
                for sub, sc in c.subdirs.items():
                    walk(sc, os.path.join(path, sub))
            walk(cmp, "")
            # dircmp compares shallowly (size, time): compare contents too.
            for root, _, files in os.walk(args.out):
                for f in files:
                    p = os.path.join(root, f)
                    q = os.path.join(tmp, "cases", os.path.relpath(p, args.out))
                    if os.path.exists(q) and not filecmp.cmp(p, q,
                                                             shallow=False):
                        diffs.append(os.path.relpath(p, args.out))
            if diffs:
                print("differ:", *sorted(set(diffs))[:20], sep="\n  ")
                sys.exit(1)
            print(f"{len(S.cases)} cases reproduced byte for byte")
        return
    S.write(args.out)
    print(f"wrote {len(S.cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
