"""NumPy reference evaluator of Kina IR for differential testing.

Written from the language reference (docs/language.md and the spec), op by
op, not from the lowering. Values: float64 arrays holding values exact in
the element type (f64 f32 f16 bf16), int64 arrays for i64/i32/i8 (wrapped
to the type after every op), bool arrays for i1.

Floats: each op is computed in float64 from its exact operands and rounded
once to the result type (kina_values.round_float, ties to even). A correct
compiler computes f32 in f32 and f16/bf16 in f32 with one rounding, so its
results may differ from these in the last bits wherever libm or an
accumulation is involved. To tell such differences from bugs, `evaluate`
also runs the program in VARIANT modes:
 - "low": every inexact op computed in the accumulation type (float32 for
   f32/f16/bf16; sums sequentially, with float32 overflow), as a compiler
   would;
 - "p1", "p2": every inexact op's result perturbed before rounding by
   random amounts within its error bound (4 ulps of the compute type for
   elementwise functions; (n+2) ulps of the sum of magnitudes for sums,
   matmuls and norms).
Ops the spec makes exact (moves, compares, casts, select, neg/abs/relu,
max/min, floor/ceil, integer arithmetic; IEEE add/sub/mul/div/sqrt, which
are correctly rounded in every float type: f16 and bf16 computed in f32
and rounded again have no double-rounding error because 24 >= 2p + 2) are
never perturbed. `compare` (difftest.py) skips output elements whose value
differs between the modes in kind (NaN, infinity, integer or i1 value) and
allows a finite float the larger of its docs/tolerances.md class's
tolerance and twice the largest deviation between the modes. Raises RefError for what the spec makes a
run-time Validation Error that depends on values (a gather index outside
[-n, n)).
"""

import math

import numpy as np

from kgen import FLOATS, INTS, Invalid, Lit, Dense, is_static  # noqa: F401
from kina_values import round_float, round_int_to_float, int_range

EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23}
MODES = ["base", "low", "p1", "p2"]


class RefError(Exception):
    """A run-time Validation Error the reference detects."""


def cdt(dt):
    """The accumulation (compute) type of a float type."""
    return "f64" if dt == "f64" else "f32"


def wrap(v, dt):
    """int64 values wrapped to the integer type dt."""
    v = np.asarray(v, dtype=np.int64)
    if dt == "i64":
        return v
    bits = 32 if dt == "i32" else 8
    m = np.int64(1 << bits)
    h = np.int64(1 << (bits - 1))
    return ((v + h) % m) - h


class Ctx:
    def __init__(self, mode, seed):
        self.mode = mode
        self.rng = np.random.default_rng(seed)

    @property
    def low(self):
        return self.mode == "low"

    @property
    def perturb(self):
        return self.mode in ("p1", "p2")

    def fin(self, x, dt, scale=None):
        """Round an inexact op's float64 result to dt, perturbed in p*
        modes by up to `scale` (default: 4 ulps of the compute type)."""
        x = np.asarray(x, dtype=np.float64)
        if self.perturb:
            if scale is None:
                scale = 4 * EPS[cdt(dt)] * np.abs(x)
            r = self.rng.uniform(-1, 1, size=x.shape)
            with np.errstate(all="ignore"):
                x = np.where(np.isfinite(x), x + r * scale, x)
        return round_float(x, dt)

    def work(self, x, dt):
        """Operand array in the precision an inexact op is computed in."""
        x = np.asarray(x, dtype=np.float64)
        if self.low and dt != "f64":
            return x.astype(np.float32)
        return x


def lit_value(v, dt):
    if dt == "i1":
        return np.array(bool(v))
    if dt in INTS:
        return np.array(int(v), dtype=np.int64)
    return round_float(np.array(float(v)), dt)


def cast(x, src, dst):
    if src == dst:
        return x.copy()
    if dst == "i1":
        if src in FLOATS:
            return (x != 0) | np.isnan(x)
        return x != 0
    if src == "i1":
        if dst in FLOATS:
            return x.astype(np.float64)
        return x.astype(np.int64)
    if dst in INTS:
        if src in INTS:
            return wrap(x, dst)
        lo, hi = int_range(dst)
        t = np.trunc(np.where(np.isnan(x), 0.0, x))
        out = np.empty(x.shape, dtype=np.int64)
        flat_t, flat_o = t.reshape(-1), out.reshape(-1)
        for i, v in enumerate(flat_t):
            flat_o[i] = lo if v <= lo else hi if v >= hi else int(v)
        return out
    if src in INTS:
        return round_int_to_float(x, dst)
    return round_float(x, dst)  # float -> float, one rounding


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


def unary(op, x, dt, attrs, c):
    if dt == "i1":
        return ~x
    if dt in INTS:
        return wrap(-x if op == "neg" else np.abs(x), dt)
    exact = {"neg": np.negative, "abs": np.abs, "floor": np.floor,
             "ceil": np.ceil, "sqrt": np.sqrt}
    with np.errstate(all="ignore"):
        if op in exact:
            return round_float(exact[op](x), dt)
        if op == "relu":
            return np.where(np.isnan(x), x, np.maximum(x, 0.0))
        w = c.work(x, dt)
        if op == "exp":
            r = np.exp(w)
        elif op == "log":
            r = np.log(w)
        elif op == "rsqrt":
            r = 1 / np.sqrt(w)
        elif op == "tanh":
            r = np.tanh(w)
        elif op == "sigmoid":
            r = 1 / (1 + np.exp(-w))
        elif op == "erf":
            r = erf(np.asarray(w, dtype=np.float64)).astype(w.dtype)
        elif op == "sin":
            r = np.sin(w)
        elif op == "cos":
            r = np.cos(w)
        elif op == "gelu":
            if attrs.get("approximate", "none") == "tanh":
                k = w.dtype.type(math.sqrt(2 / math.pi))
                r = 0.5 * w * (1 + np.tanh(k * (w + w.dtype.type(0.044715) *
                                                 w * w * w)))
            else:
                e = erf(np.asarray(w, np.float64) / math.sqrt(2)).astype(
                    w.dtype)
                r = 0.5 * w * (1 + e)
        else:
            raise AssertionError(op)
        return c.fin(r, dt)


def int_pow(a, b, dt):
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    res = np.ones(a.shape, dtype=np.int64)
    base = a.copy()
    e = np.where(b < 0, 0, b)
    with np.errstate(all="ignore"):
        for _ in range(64):
            odd = (e & 1) == 1
            res = np.where(odd, res * base, res)
            base = base * base
            e = e >> 1
    neg = b < 0
    res = np.where(neg, np.where(a == 1, 1, np.where(
        a == -1, np.where((b & 1) == 1, -1, 1), 0)), res)
    return wrap(res, dt)


def binary(op, x, y, dt, c):
    if dt == "i1":
        return {"add": np.logical_or, "max": np.logical_or,
                "mul": np.logical_and, "min": np.logical_and}[op](x, y)
    if dt in INTS:
        x, y = np.broadcast_arrays(x, y)
        with np.errstate(all="ignore"):
            if op == "add":
                r = x + y
            elif op == "sub":
                r = x - y
            elif op == "mul":
                r = x * y
            elif op == "div":
                safe = np.where(y == 0, 1, y)
                r = np.where(y == 0, 0, np.where(y == -1, -x,
                                                  np.floor_divide(x, safe)))
            elif op == "mod":
                safe = np.where((y == 0) | (y == -1), 1, y)
                r = np.where((y == 0) | (y == -1), 0, np.mod(x, safe))
            elif op == "pow":
                return int_pow(x, y, dt)
            elif op == "max":
                r = np.maximum(x, y)
            elif op == "min":
                r = np.minimum(x, y)
        return wrap(r, dt)
    with np.errstate(all="ignore"):
        if op in ("add", "sub", "mul", "div", "max", "min", "mod"):
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                 "div": np.true_divide, "max": np.maximum,
                 "min": np.minimum}
            if op == "mod":
                # NumPy's mod: fmod, then moved to the divisor's sign.
                m = np.fmod(x, y)
                fix = (m != 0) & ((m < 0) != (y < 0))
                r = np.where(fix, round_float(m + y, dt) if dt != "f64"
                             else m + y, m)
                r = np.where((m == 0) & ~np.isnan(m), np.copysign(0.0, y), r)
                return round_float(r, dt)
            return round_float(f[op](x, y), dt)
        w1, w2 = c.work(x, dt), c.work(y, dt)
        return c.fin(np.power(w1, w2), dt)


def compare_op(op, x, y):
    return {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
            "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}[op](x, y)


def fsum(x, axes, dt, c, keep=False):
    """Sum over axes of float values, with the error model of the module
    comment; returns (sum, sum of magnitudes, count)."""
    axes = tuple(axes)
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    with np.errstate(all="ignore"):
        if c.low and dt != "f64":
            moved = np.moveaxis(x.astype(np.float32), axes,
                                range(x.ndim - len(axes), x.ndim))
            flat = moved.reshape(moved.shape[:x.ndim - len(axes)] + (n,))
            s = (np.cumsum(flat, axis=-1, dtype=np.float32)[..., -1]
                 if n else np.zeros(flat.shape[:-1], np.float32))
            s = s.astype(np.float64)
            if keep:
                for a in sorted(axes):
                    s = np.expand_dims(s, a)
        else:
            s = np.sum(x, axis=axes, keepdims=keep)
        mag = np.sum(np.abs(x), axis=axes, keepdims=keep)
    return s, mag, n


def reduce(op, x, dt, attrs, c):
    r = x.ndim
    axes = attrs.get("axes", [])
    axes = sorted(a % r for a in axes) if axes else list(range(r))
    keep = attrs.get("keepdims", False)
    ax = tuple(axes)
    if op in ("reduce_max", "reduce_min"):
        if any(x.shape[a] == 0 for a in axes):
            raise RefError("max/min over size 0")
        f = np.max if op == "reduce_max" else np.min
        return f(x, axis=ax, keepdims=keep)
    if dt in INTS:
        with np.errstate(all="ignore"):
            f = np.sum if op == "reduce_sum" else np.prod
            return wrap(f(x, axis=ax, keepdims=keep, dtype=np.int64), dt)
    if op == "reduce_prod":
        with np.errstate(all="ignore"):
            if c.low and dt != "f64":
                p = np.prod(x.astype(np.float32), axis=ax, keepdims=keep)
            else:
                p = np.prod(x, axis=ax, keepdims=keep)
            n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
            return c.fin(p, dt, (n + 2) * 2 * EPS[cdt(dt)] * np.abs(p))
    s, mag, n = fsum(x, ax, dt, c, keep)
    with np.errstate(all="ignore"):
        scale = (n + 2) * EPS[cdt(dt)] * mag
        if op == "reduce_mean":
            if n == 0:
                return np.full(np.shape(s), np.nan)
            return c.fin(s / n, dt, scale / n)
        return c.fin(s, dt, scale)


def argx(op, x, attrs):
    k = attrs.get("axis", -1) % x.ndim
    keep = attrs.get("keepdims", False)
    if x.shape[k] == 0:
        raise RefError("argmax over size 0")
    m = np.moveaxis(x, k, -1)
    flat = m.reshape(-1, m.shape[-1])
    out = np.empty(flat.shape[0], dtype=np.int64)
    for i, row in enumerate(flat):
        if row.dtype == np.float64 and np.isnan(row).any():
            out[i] = int(np.argmax(np.isnan(row)))
        else:
            out[i] = int(np.argmax(row) if op == "argmax" else np.argmin(row))
    out = out.reshape(m.shape[:-1])
    if keep:
        out = np.expand_dims(out, k)
    return out


def softmax(op, x, dt, attrs, c):
    k = attrs.get("axis", -1) % x.ndim
    w = c.work(x, dt)
    with np.errstate(all="ignore"):
        m = np.max(w, axis=k, keepdims=True) if x.shape[k] else w
        z = w - m
        e = np.exp(z)
        s = np.sum(e, axis=k, keepdims=True)
        n = x.shape[k]
        if op == "softmax":
            r = e / s
            scale = (n + 6) * EPS[cdt(dt)] * np.abs(r)
        else:
            r = z - np.log(s)
            scale = (n + 6) * EPS[cdt(dt)] * (np.abs(z) + np.abs(np.log(s))
                                              + 1)
    return c.fin(r, dt, scale)


def norm(op, x, g, b, dt, attrs, c):
    k = attrs.get("axis", -1) % x.ndim
    eps = float(attrs.get("epsilon", 1e-5 if op == "layer_norm" else 1e-6))
    ax = tuple(range(k, x.ndim))
    n = int(np.prod(x.shape[k:]))
    e = EPS[cdt(dt)]
    w = c.work(x, dt)
    gw = c.work(g, dt)
    with np.errstate(all="ignore"):
        if op == "layer_norm":
            mean = np.sum(w, axis=ax, keepdims=True) / max(n, 1) if n else \
                np.full(w.shape[:k] + (1,) * len(ax), np.nan, w.dtype)
            if c.perturb:
                mag = np.sum(np.abs(x), axis=ax, keepdims=True) / max(n, 1)
                mean = mean + c.rng.uniform(-1, 1, mean.shape) * (n + 2) * \
                    e * mag
            d = w - mean
            var = np.sum(d * d, axis=ax, keepdims=True) / max(n, 1)
            if c.perturb:
                var = var * (1 + c.rng.uniform(-1, 1, var.shape) *
                             (n + 4) * e)
            r = d / np.sqrt(var + w.dtype.type(eps)) * gw + c.work(b, dt)
        else:
            ms = np.sum(w * w, axis=ax, keepdims=True) / max(n, 1)
            if c.perturb:
                ms = ms * (1 + c.rng.uniform(-1, 1, ms.shape) * (n + 4) * e)
            r = w / np.sqrt(ms + w.dtype.type(eps)) * gw
    return c.fin(r, dt, 8 * e * np.abs(np.asarray(r, np.float64)))


def matmul(x, y, dt, c):
    xv, yv = x.ndim == 1, y.ndim == 1
    if dt in INTS:
        with np.errstate(all="ignore"):
            return wrap(np.matmul(x.astype(np.int64), y.astype(np.int64)), dt)
    with np.errstate(all="ignore"):
        if c.low and dt != "f64":
            r = np.matmul(x.astype(np.float32), y.astype(np.float32))
        else:
            r = np.matmul(x, y)
        k = x.shape[-1]
        mag = np.matmul(np.abs(x), np.abs(y))
    del xv, yv
    return c.fin(r, dt, (k + 2) * EPS[cdt(dt)] * mag)


def slice_op(x, attrs):
    r = x.ndim
    step = attrs.get("step", [1] * r)
    idx = tuple(slice(b, e, t) for b, e, t in
                zip(attrs["start"], attrs["stop"], step))
    return x[idx].copy()


def gather(t, idx, attrs):
    k = attrs.get("axis", 0) % t.ndim
    n = t.shape[k]
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise RefError("gather index out of range")
    return np.take(t, np.where(idx < 0, idx + n, idx), axis=k)


def eval_func(prog, f, args, c, depth=0):
    from kgen import infer_function, param_env
    shapes = [a.shape for a in args]
    infos = {}
    infer_function(f, shapes, prog.funcs, depth, infos)
    env = param_env(f, shapes)
    vals = {pn: a for (pn, _, _), a in zip(f.params, args)}
    for s in f.stmts:
        dtr = infos[s.res[0]].dt

        def val(a, dt):
            if isinstance(a, Lit):
                return lit_value(a.value, dt)
            return vals[a]
        op = s.op
        ops_dt = None
        for a in s.args:
            if isinstance(a, str):
                ops_dt = infos[a].dt
                break
        if op == "call":
            outs = eval_func(prog, prog.funcs[s.callee],
                             [vals[a] for a in s.args], c, depth + 1)
            for r, v in zip(s.res, outs):
                vals[r] = v
            continue
        if op == "select":
            cond = val(s.args[0], "i1")
            branch_dt = next((infos[a].dt for a in s.args[1:]
                              if isinstance(a, str)))
            out = np.where(cond, val(s.args[1], branch_dt),
                           val(s.args[2], branch_dt))
        elif op in ("add", "sub", "mul", "div", "mod", "pow", "max", "min"):
            x, y = val(s.args[0], ops_dt), val(s.args[1], ops_dt)
            out = binary(op, x, y, ops_dt, c)
        elif op in ("eq", "ne", "lt", "le", "gt", "ge"):
            out = compare_op(op, val(s.args[0], ops_dt),
                             val(s.args[1], ops_dt))
        elif op == "cast":
            out = cast(vals[s.args[0]], ops_dt, str(s.attrs["to"]))
        elif op == "constant":
            dt, dims = s.annot[0]
            a = s.args[0]
            if isinstance(a, Lit):
                out = np.broadcast_to(lit_value(a.value, dt), dims).copy()
            else:
                out = np.array([lit_value(v, dt) for v in a.values]).reshape(
                    dims)
                if dt in FLOATS:
                    out = out.astype(np.float64)
                elif dt in INTS:
                    out = out.astype(np.int64)
                else:
                    out = out.astype(bool)
        elif op == "iota":
            dt, dims = s.annot[0]
            shape = [d if is_static(d) else env[d] for d in dims]
            k = s.attrs.get("axis", 0) % len(shape)
            ix = np.arange(shape[k], dtype=np.int64).reshape(
                [-1 if j == k else 1 for j in range(len(shape))])
            ix = np.broadcast_to(ix, shape)
            out = cast(ix, "i64", dt)
        elif op == "matmul":
            out = matmul(vals[s.args[0]], vals[s.args[1]], ops_dt, c)
        elif op == "transpose":
            x = vals[s.args[0]]
            perm = s.attrs.get("perm", list(range(x.ndim))[::-1])
            out = np.transpose(x, [p % x.ndim for p in perm]).copy()
        elif op in ("reshape", "broadcast_to"):
            out = np.broadcast_to(vals[s.args[0]],
                                  infos[s.res[0]].shape).copy() \
                if op == "broadcast_to" else \
                vals[s.args[0]].reshape(infos[s.res[0]].shape).copy()
        elif op == "concat":
            xs = [vals[a] for a in s.args]
            out = np.concatenate(xs, axis=s.attrs.get("axis", 0) % xs[0].ndim)
        elif op == "slice":
            out = slice_op(vals[s.args[0]], s.attrs)
        elif op == "gather":
            idx = s.args[1]
            iv = np.array(idx.value) if isinstance(idx, Lit) else vals[idx]
            out = gather(vals[s.args[0]], iv, s.attrs)
        elif op.startswith("reduce_"):
            out = reduce(op, vals[s.args[0]], ops_dt, s.attrs, c)
        elif op in ("argmax", "argmin"):
            out = argx(op, vals[s.args[0]], s.attrs)
        elif op in ("softmax", "log_softmax"):
            out = softmax(op, vals[s.args[0]], ops_dt, s.attrs, c)
        elif op in ("layer_norm", "rms_norm"):
            b = vals[s.args[2]] if op == "layer_norm" else None
            out = norm(op, vals[s.args[0]], vals[s.args[1]], b, ops_dt,
                       s.attrs, c)
        else:
            out = unary(op, vals[s.args[0]], ops_dt, s.attrs, c)
        out = np.asarray(out)
        if dtr in FLOATS:
            out = out.astype(np.float64)
        exp_shape = tuple(infos[s.res[0]].shape)
        if out.shape != exp_shape:
            raise AssertionError(f"reference shape {out.shape} != inferred "
                                 f"{exp_shape} for {s.op}")
        vals[s.res[0]] = out
    return [vals[r] for r in f.rets]


def evaluate(prog, modes=MODES, seed=0):
    """{mode: [output arrays]} of main on prog.inputs (see the module
    comment); raises RefError or kgen.Invalid."""
    f = prog.main_func()
    args = [np.asarray(prog.inputs[p]) for p, _, _ in f.params]
    out = {}
    for i, m in enumerate(modes):
        out[m] = eval_func(prog, f, args, Ctx(m, [seed, i]))
    return out
