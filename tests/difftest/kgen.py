"""Random valid Kina IR programs for differential testing (docs/reliability.md).

A program is held as Python objects (Func, Stmt, Lit, Dense, Sym, DT) and
printed as .kir text. `infer_function` re-derives, statement by statement,
the static type the language reference gives each result (docs/language.md:
the broadcasting table, slice, concat, reshape, call, ...) together with
the concrete shape the program will have for its inputs, and raises Invalid
for anything the reference calls a compile error or a run-time Validation
Error that depends on shapes. The generator proposes random statements and
keeps those that `infer_stmt` accepts, so programs are valid by
construction; the reducer (difftest.py) edits programs and re-runs the same
check. Value-dependent rules (gather indices in range) are checked by the
reference evaluator (kref.py). Needs /usr/bin/python3 with NumPy.
"""

import json
import math

import numpy as np

FLOATS = ["f64", "f32", "f16", "bf16"]
INTS = ["i64", "i32", "i8"]
DTYPES = FLOATS + INTS + ["i1"]
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
MAX_RANK = 8

UNARY_FLOAT = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
               "relu", "gelu", "erf", "sin", "cos", "floor", "ceil"]
BINARY = ["add", "sub", "mul", "div", "mod", "pow", "max", "min"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
          "reduce_prod"]
ARG = ["argmax", "argmin"]
NORM = ["softmax", "log_softmax", "layer_norm", "rms_norm"]
LAYOUT = ["transpose", "reshape", "broadcast_to", "concat", "slice"]


class Invalid(Exception):
    """The statement or program is not valid Kina IR (or would fail a
    shape check at run time)."""


class Sym(str):
    """A symbolic dim name inside an attribute list (reshape/broadcast_to)."""


class DT(str):
    """An element type inside an attribute (cast's `to`)."""


class Lit:
    """A number literal operand; `value` is a Python int, float or bool."""

    def __init__(self, value):
        self.value = value

    def text(self):
        return fmt_number(self.value)


class Dense:
    """The operand of `constant dense<...>`: a flat list of values of the
    annotation's shape (row-major)."""

    def __init__(self, values):
        self.values = list(values)


class Stmt:
    def __init__(self, res, op, args, attrs=None, annot=None, callee=None):
        self.res = list(res)            # result names (without %)
        self.op = op
        self.args = list(args)          # names (str), Lit or Dense
        self.attrs = dict(attrs or {})  # insertion order is printing order
        self.annot = annot              # None or [(dt, dims)] per result
        self.callee = callee            # for call


class Func:
    def __init__(self, name, private=False):
        self.name = name
        self.private = private
        self.params = []   # [(name, dt, dims)]
        self.stmts = []
        self.rets = []     # returned value names
        self.ret_types = []  # declared [(dt, dims)]


class Program:
    """Functions (main is exported, the others private helpers) and the
    concrete inputs of main: {param name: value array} (float64 for floats,
    int64 for integers, bool for i1)."""

    def __init__(self, main, funcs, inputs):
        self.main = main
        self.funcs = funcs          # {name: Func}
        self.inputs = inputs

    def main_func(self):
        return self.funcs[self.main]


class Info:
    """What is known of one value: its element type, static dims (int, '?'
    or a symbol name) and concrete shape."""

    __slots__ = ("dt", "dims", "shape")

    def __init__(self, dt, dims, shape):
        self.dt, self.dims, self.shape = dt, tuple(dims), tuple(shape)


# ----------------------------------------------------------------- printing

def fmt_number(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    r = repr(v)
    if "e" in r and "." not in r.split("e")[0]:
        m, e = r.split("e")
        r = m + ".0e" + e
    return r


def fmt_type(dt, dims):
    if not dims:
        return f"{dt}[]"
    return f"{dt}[{', '.join(str(d) for d in dims)}]"


def fmt_attr(v):
    if isinstance(v, list):
        return "[" + ", ".join(fmt_attr(x) for x in v) + "]"
    if isinstance(v, (Sym, DT)):
        return str(v)
    if isinstance(v, str):
        return '"' + v + '"'
    return fmt_number(v)


def fmt_dense(values, shape):
    flat = list(values)
    if not shape:
        return fmt_number(flat[0])

    def rec(vals, sh):
        if len(sh) == 1:
            return "[" + ", ".join(fmt_number(x) for x in vals) + "]"
        n = len(vals) // sh[0] if sh[0] else 0
        return "[" + ", ".join(rec(vals[i * n:(i + 1) * n], sh[1:])
                               for i in range(sh[0])) + "]"
    return rec(flat, list(shape))


def print_stmt(s):
    lhs = ", ".join("%" + r for r in s.res)
    if s.op == "call":
        rhs = f"call @{s.callee}(" + ", ".join(
            a.text() if isinstance(a, Lit) else "%" + a for a in s.args) + ")"
    else:
        ops = []
        for a in s.args:
            if isinstance(a, Lit):
                ops.append(a.text())
            elif isinstance(a, Dense):
                dt, dims = s.annot[0]
                ops.append("dense<" + fmt_dense(a.values, dims) + ">")
            else:
                ops.append("%" + a)
        rhs = s.op + (" " + ", ".join(ops) if ops else "")
    if s.attrs:
        rhs += " {" + ", ".join(f"{k} = {fmt_attr(v)}"
                                for k, v in s.attrs.items()) + "}"
    if s.annot is not None:
        ts = [fmt_type(dt, dims) for dt, dims in s.annot]
        rhs += " : " + (ts[0] if len(ts) == 1 else "(" + ", ".join(ts) + ")")
    return f"  {lhs} = {rhs}"


def print_func(f, rename=None, lines=None, first_line=1):
    """Text of one function; `rename` maps function names (calls, the
    header); `lines` (a dict) receives stmt index -> line number."""
    rn = rename or {}
    params = ", ".join(f"%{n}: {fmt_type(dt, dims)}" for n, dt, dims in f.params)
    rts = [fmt_type(dt, dims) for dt, dims in f.ret_types]
    rt = rts[0] if len(rts) == 1 else "(" + ", ".join(rts) + ")"
    out = [("private " if f.private else "") +
           f"func @{rn.get(f.name, f.name)}({params}) -> {rt} {{"]
    for i, s in enumerate(f.stmts):
        if s.op == "call" and s.callee in rn:
            s = Stmt(s.res, s.op, s.args, s.attrs, s.annot, rn[s.callee])
        if lines is not None:
            lines[i] = first_line + len(out)
        out.append(print_stmt(s))
    out.append("  return " + ", ".join("%" + r for r in f.rets))
    out.append("}")
    return "\n".join(out)


def func_order(prog):
    """Helpers first, then main."""
    return [n for n in prog.funcs if n != prog.main] + [prog.main]


def print_program(prog, rename=None):
    return "\n\n".join(print_func(prog.funcs[n], rename)
                       for n in func_order(prog)) + "\n"


# ------------------------------------------------------------ serialization

def _enc(v):
    if isinstance(v, Sym):
        return {"sym": str(v)}
    if isinstance(v, DT):
        return {"dt": str(v)}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": fmt_number(v)}
    if isinstance(v, float):
        return {"float": repr(v)}
    return v


def _dec(v):
    if isinstance(v, dict):
        if "sym" in v:
            return Sym(v["sym"])
        if "dt" in v:
            return DT(v["dt"])
        if "float" in v:
            return float(v["float"])
    if isinstance(v, list):
        return [_dec(x) for x in v]
    return v


def _enc_arg(a):
    if isinstance(a, Lit):
        return {"lit": _enc(a.value)}
    if isinstance(a, Dense):
        return {"dense": [_enc(float(x)) if isinstance(x, float) else x
                          for x in a.values]}
    return a


def _dec_arg(a):
    if isinstance(a, dict) and "lit" in a:
        return Lit(_dec(a["lit"]))
    if isinstance(a, dict) and "dense" in a:
        return Dense([_dec(x) for x in a["dense"]])
    return a


def program_to_json(prog):
    funcs = []
    for n in func_order(prog):
        f = prog.funcs[n]
        funcs.append({
            "name": f.name, "private": f.private,
            "params": [[p, dt, list(d)] for p, dt, d in f.params],
            "rets": f.rets,
            "ret_types": [[dt, list(d)] for dt, d in f.ret_types],
            "stmts": [{"res": s.res, "op": s.op,
                       "args": [_enc_arg(a) for a in s.args],
                       "attrs": [[k, _enc(v)] for k, v in s.attrs.items()],
                       "annot": None if s.annot is None else
                       [[dt, list(d)] for dt, d in s.annot],
                       "callee": s.callee} for s in f.stmts]})
    return {"main": prog.main, "funcs": funcs}


def program_from_json(obj, inputs):
    funcs = {}
    for fo in obj["funcs"]:
        f = Func(fo["name"], fo["private"])
        f.params = [(p, dt, tuple(d)) for p, dt, d in fo["params"]]
        f.rets = list(fo["rets"])
        f.ret_types = [(dt, tuple(d)) for dt, d in fo["ret_types"]]
        for so in fo["stmts"]:
            f.stmts.append(Stmt(
                so["res"], so["op"], [_dec_arg(a) for a in so["args"]],
                {k: _dec(v) for k, v in so["attrs"]},
                None if so["annot"] is None else
                [(dt, tuple(d)) for dt, d in so["annot"]], so["callee"]))
        funcs[f.name] = f
    return Program(obj["main"], funcs, inputs)


def dumps(prog):
    return json.dumps(program_to_json(prog), indent=1)


# ---------------------------------------------------------------- inference

def is_static(d):
    return isinstance(d, int)


def norm_axis(axis, rank):
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise Invalid("axis must be an integer")
    if axis < -rank or axis >= rank:
        raise Invalid(f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def bcast_dim(a, b, ca, cb):
    """(static, concrete) of one broadcast dim (language.md's table)."""
    if a == b:
        s = a
    elif a == 1:
        s = b
    elif b == 1:
        s = a
    elif is_static(a) and is_static(b):
        raise Invalid("static sizes differ")
    elif is_static(a):
        s = a
    elif is_static(b):
        s = b
    else:
        s = "?"
    if ca == cb:
        c = ca
    elif ca == 1:
        c = cb
    elif cb == 1:
        c = ca
    else:
        raise Invalid("run-time broadcast failure")
    return s, c


def bcast(infos):
    rank = max(len(i.dims) for i in infos)
    dims = [1] * rank
    shape = [1] * rank
    for inf in infos:
        pad = rank - len(inf.dims)
        d = [1] * pad + list(inf.dims)
        c = [1] * pad + list(inf.shape)
        for k in range(rank):
            dims[k], shape[k] = bcast_dim(dims[k], d[k], shape[k], c[k])
    return dims, shape


def lit_fits(v, dt):
    if isinstance(v, bool):
        return dt == "i1"
    if dt == "i1":
        return v in (0, 1) and float(v) == int(v)
    if dt in INTS:
        if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
            return False
        bits = {"i64": 64, "i32": 32, "i8": 8}[dt]
        return -(1 << (bits - 1)) <= int(v) < (1 << (bits - 1))
    v = float(v)
    if not math.isfinite(v):
        return True
    from kina_values import round_float
    return bool(np.isfinite(round_float(v, dt)))


def group(args, infos_of):
    """Infos of a group of operands where literals take the element type of
    the first %value (language.md, literal operands)."""
    vals = [infos_of(a) for a in args if not isinstance(a, Lit)]
    if not vals:
        raise Invalid("no %value in the operand group")
    dt = vals[0].dt
    out = []
    for a in args:
        if isinstance(a, Lit):
            if not lit_fits(a.value, dt):
                raise Invalid("literal does not fit")
            out.append(Info(dt, (), ()))
        else:
            out.append(infos_of(a))
    return out


def need_value(a, infos_of):
    if isinstance(a, (Lit, Dense)):
        raise Invalid("operand must be a %value")
    return infos_of(a)


def attr_keys(s, allowed):
    for k in s.attrs:
        if k not in allowed:
            raise Invalid(f"unknown attribute {k}")


def int_list(v, what):
    if not isinstance(v, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise Invalid(f"{what} must be an integer list")
    return v


def shape_entry(e, env, allow_neg1):
    """(static, concrete) of a reshape/broadcast_to shape entry."""
    if isinstance(e, Sym):
        if e not in env:
            raise Invalid("unknown dim name")
        return str(e), env[e]
    if isinstance(e, bool) or not isinstance(e, int):
        raise Invalid("bad shape entry")
    if e == -1 and allow_neg1:
        return -1, -1
    if e < 0:
        raise Invalid("negative size")
    return e, e


def slice_len(n, start, stop, step):
    return len(range(*slice(start, stop, step).indices(n)))


def infer_stmt(s, infos_of, env, funcs, depth=0, sink=None):
    """[Info] of the results of statement `s` (see the module comment);
    `infos_of(name)` gives an operand's Info, `env` the function's symbols
    {name: size}, `funcs` the module's functions (for call)."""
    op = s.op
    a = s.args
    if op in UNARY_FLOAT or op == "not":
        attr_keys(s, ["approximate"] if op == "gelu" else [])
        if len(a) != 1:
            raise Invalid("arity")
        x = need_value(a[0], infos_of)
        if op == "not":
            if x.dt != "i1":
                raise Invalid("not expects i1")
        elif op in ("neg", "abs"):
            if x.dt == "i1":
                raise Invalid("neg/abs reject i1")
        elif x.dt not in FLOATS:
            raise Invalid("float op")
        if op == "gelu" and s.attrs.get("approximate", "none") not in (
                "none", "tanh"):
            raise Invalid("approximate")
        res = [Info(x.dt, x.dims, x.shape)]
    elif op in BINARY or op in COMPARE:
        attr_keys(s, [])
        if len(a) != 2:
            raise Invalid("arity")
        x, y = group(a, infos_of)
        if op in BINARY and x.dt == "i1" and op not in ("add", "mul", "max",
                                                        "min"):
            raise Invalid("i1 arithmetic")
        if x.dt != y.dt:
            raise Invalid("element types differ")
        dims, shape = bcast([x, y])
        res = [Info("i1" if op in COMPARE else x.dt, dims, shape)]
    elif op == "select":
        attr_keys(s, [])
        if len(a) != 3:
            raise Invalid("arity")
        if isinstance(a[0], Lit):
            if not isinstance(a[0].value, bool):
                raise Invalid("select condition literal")
            c = Info("i1", (), ())
        else:
            c = infos_of(a[0])
        if c.dt != "i1":
            raise Invalid("condition must be i1")
        x, y = group(a[1:], infos_of)
        if x.dt != y.dt:
            raise Invalid("element types differ")
        dims, shape = bcast([c, x, y])
        res = [Info(x.dt, dims, shape)]
    elif op == "cast":
        attr_keys(s, ["to"])
        if len(a) != 1:
            raise Invalid("arity")
        x = need_value(a[0], infos_of)
        to = s.attrs.get("to")
        if not isinstance(to, DT) or to not in DTYPES:
            raise Invalid("cast needs to")
        res = [Info(str(to), x.dims, x.shape)]
    elif op == "constant":
        attr_keys(s, [])
        if s.annot is None or len(s.annot) != 1 or len(a) != 1:
            raise Invalid("constant needs a type")
        dt, dims = s.annot[0]
        if not all(is_static(d) for d in dims):
            raise Invalid("constant needs a static type")
        n = int(np.prod(dims)) if dims else 1
        if isinstance(a[0], Lit):
            vals = [a[0].value]
        elif isinstance(a[0], Dense):
            vals = a[0].values
            if len(vals) != n or (n == 0 and len(dims) != 1):
                raise Invalid("dense shape")
        else:
            raise Invalid("constant operand")
        for v in vals:
            if not lit_fits(v, dt):
                raise Invalid("constant value does not fit")
        res = [Info(dt, dims, dims)]
    elif op == "iota":
        attr_keys(s, ["axis"])
        if s.annot is None or len(s.annot) != 1 or a:
            raise Invalid("iota needs a type")
        dt, dims = s.annot[0]
        if dt == "i1" or not dims:
            raise Invalid("iota type")
        shape = []
        for d in dims:
            if is_static(d):
                shape.append(d)
            elif d in env:
                shape.append(env[d])
            else:
                raise Invalid("iota dims")
        norm_axis(s.attrs.get("axis", 0), len(dims))
        res = [Info(dt, dims, shape)]
    elif op == "matmul":
        attr_keys(s, [])
        if len(a) != 2:
            raise Invalid("arity")
        x, y = need_value(a[0], infos_of), need_value(a[1], infos_of)
        if x.dt != y.dt or x.dt == "i1" or not x.dims or not y.dims:
            raise Invalid("matmul types")
        xd, xs = list(x.dims), list(x.shape)
        yd, ys = list(y.dims), list(y.shape)
        xv, yv = len(xd) == 1, len(yd) == 1
        if xv:
            xd, xs = [1] + xd, [1] + xs
        if yv:
            yd, ys = yd + [1], ys + [1]
        if is_static(xd[-1]) and is_static(yd[-2]) and xd[-1] != yd[-2]:
            raise Invalid("K differs")
        if xs[-1] != ys[-2]:
            raise Invalid("K differs at run time")
        bd, bs = bcast([Info(x.dt, xd[:-2], xs[:-2]),
                        Info(x.dt, yd[:-2], ys[:-2])]) \
            if (len(xd) > 2 or len(yd) > 2) else ([], [])
        dims, shape = list(bd), list(bs)
        if not xv:
            dims.append(xd[-2])
            shape.append(xs[-2])
        if not yv:
            dims.append(yd[-1])
            shape.append(ys[-1])
        res = [Info(x.dt, dims, shape)]
    elif op == "transpose":
        attr_keys(s, ["perm"])
        x = need_value(a[0], infos_of)
        r = len(x.dims)
        perm = s.attrs.get("perm", list(range(r))[::-1])
        perm = [norm_axis(p, r) for p in int_list(perm, "perm")]
        if sorted(perm) != list(range(r)):
            raise Invalid("perm")
        res = [Info(x.dt, [x.dims[p] for p in perm],
                    [x.shape[p] for p in perm])]
    elif op == "reshape":
        attr_keys(s, ["shape"])
        x = need_value(a[0], infos_of)
        sh = s.attrs.get("shape")
        if not isinstance(sh, list):
            raise Invalid("reshape needs shape")
        ents = [shape_entry(e, env, True) for e in sh]
        if sum(1 for e in ents if e[0] == -1) > 1:
            raise Invalid("two -1")
        count = int(np.prod(x.shape)) if x.shape else 1
        other = 1
        for st, c in ents:
            if st != -1:
                other *= c
        dims, shape = [], []
        all_static = all(is_static(d) for d in x.dims) and all(
            is_static(st) for st, _ in ents)
        for st, c in ents:
            if st == -1:
                if other == 0 or count % other:
                    raise Invalid("-1 does not divide")
                c = count // other
                dims.append(c if all_static else "?")
                shape.append(c)
            else:
                dims.append(st)
                shape.append(c)
        if int(np.prod(shape) if shape else 1) != count:
            raise Invalid("element counts differ")
        res = [Info(x.dt, dims, shape)]
    elif op == "broadcast_to":
        attr_keys(s, ["shape"])
        x = need_value(a[0], infos_of)
        sh = s.attrs.get("shape")
        if not isinstance(sh, list):
            raise Invalid("broadcast_to needs shape")
        ents = [shape_entry(e, env, False) for e in sh]
        if len(ents) < len(x.dims):
            raise Invalid("rank")
        pad = len(ents) - len(x.dims)
        for k, (d, c) in enumerate(zip(x.dims, x.shape)):
            st, ct = ents[pad + k]
            if is_static(d) and d != 1 and is_static(st) and st != d:
                raise Invalid("broadcast_to static")
            if c != 1 and c != ct:
                raise Invalid("broadcast_to run time")
        res = [Info(x.dt, [e[0] for e in ents], [e[1] for e in ents])]
    elif op == "concat":
        attr_keys(s, ["axis"])
        xs = [need_value(v, infos_of) for v in a]
        if not xs:
            raise Invalid("concat arity")
        r = len(xs[0].dims)
        if r == 0 or any(len(x.dims) != r or x.dt != xs[0].dt for x in xs):
            raise Invalid("concat types")
        k = norm_axis(s.attrs.get("axis", 0), r)
        dims, shape = [], []
        for j in range(r):
            ds = [x.dims[j] for x in xs]
            cs = [x.shape[j] for x in xs]
            if j == k:
                dims.append(sum(ds) if all(is_static(d) for d in ds) else "?")
                shape.append(sum(cs))
                continue
            st = [d for d in ds if is_static(d)]
            if len(set(st)) > 1 or len(set(cs)) > 1:
                raise Invalid("concat dims differ")
            dims.append(ds[0] if len(set(ds)) == 1 else (st[0] if st else "?"))
            shape.append(cs[0])
        res = [Info(xs[0].dt, dims, shape)]
    elif op == "slice":
        attr_keys(s, ["start", "stop", "step"])
        x = need_value(a[0], infos_of)
        r = len(x.dims)
        start = int_list(s.attrs.get("start"), "start")
        stop = int_list(s.attrs.get("stop"), "stop")
        step = int_list(s.attrs.get("step", [1] * r), "step")
        if len(start) != r or len(stop) != r or len(step) != r or 0 in step:
            raise Invalid("slice lists")
        dims, shape = [], []
        for d, c, b, e, t in zip(x.dims, x.shape, start, stop, step):
            n = slice_len(c, b, e, t)
            if is_static(d):
                dims.append(n)
            elif (b, e, t) in ((0, INT64_MAX, 1), (-1, INT64_MIN, -1)):
                dims.append(d)
            else:
                dims.append("?")
            shape.append(n)
        res = [Info(x.dt, dims, shape)]
    elif op == "gather":
        attr_keys(s, ["axis"])
        if len(a) != 2:
            raise Invalid("arity")
        t = need_value(a[0], infos_of)
        if not t.dims:
            raise Invalid("gather table rank 0")
        k = norm_axis(s.attrs.get("axis", 0), len(t.dims))
        if isinstance(a[1], Lit):
            v = a[1].value
            if isinstance(v, bool) or not isinstance(v, int):
                raise Invalid("gather literal")
            if is_static(t.dims[k]) and not -t.dims[k] <= v < t.dims[k]:
                raise Invalid("gather literal out of range")
            i = Info("i64", (), ())
        else:
            i = infos_of(a[1])
        if i.dt not in ("i32", "i64"):
            raise Invalid("gather indices")
        res = [Info(t.dt, list(t.dims[:k]) + list(i.dims) +
                    list(t.dims[k + 1:]),
                    list(t.shape[:k]) + list(i.shape) + list(t.shape[k + 1:]))]
    elif op in REDUCE:
        attr_keys(s, ["axes", "keepdims"])
        x = need_value(a[0], infos_of)
        if x.dt == "i1" and op not in ("reduce_max", "reduce_min"):
            raise Invalid("i1 reduction")
        if op == "reduce_mean" and x.dt not in FLOATS:
            raise Invalid("mean of integers")
        r = len(x.dims)
        axes = int_list(s.attrs.get("axes", []), "axes")
        axes = [norm_axis(v, r) for v in axes] if axes else list(range(r))
        if len(set(axes)) != len(axes):
            raise Invalid("repeated axis")
        keep = s.attrs.get("keepdims", False)
        if not isinstance(keep, bool):
            raise Invalid("keepdims")
        if op in ("reduce_max", "reduce_min") and any(
                x.shape[k] == 0 for k in axes):
            raise Invalid("max/min over size 0")
        dims, shape = [], []
        for k in range(r):
            if k in axes:
                if keep:
                    dims.append(1)
                    shape.append(1)
            else:
                dims.append(x.dims[k])
                shape.append(x.shape[k])
        res = [Info(x.dt, dims, shape)]
    elif op in ARG:
        attr_keys(s, ["axis", "keepdims"])
        x = need_value(a[0], infos_of)
        r = len(x.dims)
        if r == 0:
            raise Invalid("argmax rank 0")
        k = norm_axis(s.attrs.get("axis", -1), r)
        keep = s.attrs.get("keepdims", False)
        if not isinstance(keep, bool):
            raise Invalid("keepdims")
        if x.shape[k] == 0:
            raise Invalid("argmax over size 0")
        dims = list(x.dims)
        shape = list(x.shape)
        if keep:
            dims[k], shape[k] = 1, 1
        else:
            del dims[k]
            del shape[k]
        res = [Info("i64", dims, shape)]
    elif op in ("softmax", "log_softmax"):
        attr_keys(s, ["axis"])
        x = need_value(a[0], infos_of)
        if x.dt not in FLOATS or not x.dims:
            raise Invalid("softmax type")
        norm_axis(s.attrs.get("axis", -1), len(x.dims))
        res = [Info(x.dt, x.dims, x.shape)]
    elif op in ("layer_norm", "rms_norm"):
        attr_keys(s, ["axis", "epsilon"])
        n = 3 if op == "layer_norm" else 2
        if len(a) != n:
            raise Invalid("arity")
        xs = [need_value(v, infos_of) for v in a]
        x = xs[0]
        if x.dt not in FLOATS or not x.dims or any(v.dt != x.dt for v in xs):
            raise Invalid("norm types")
        k = norm_axis(s.attrs.get("axis", -1), len(x.dims))
        for g in xs[1:]:
            if len(g.dims) != len(x.dims) - k:
                raise Invalid("norm param rank")
            for d, c, xd, xc in zip(g.dims, g.shape, x.dims[k:], x.shape[k:]):
                if is_static(d) and is_static(xd) and d != xd:
                    raise Invalid("norm param static")
                if c != xc:
                    raise Invalid("norm param run time")
        eps = s.attrs.get("epsilon", 1e-5)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or \
                not math.isfinite(eps) or eps < 0:
            raise Invalid("epsilon")
        res = [Info(x.dt, x.dims, x.shape)]
    elif op == "call":
        attr_keys(s, [])
        f = funcs.get(s.callee)
        if f is None or not f.private or depth > 2:
            raise Invalid("callee")
        if len(a) != len(f.params):
            raise Invalid("call arity")
        xs = [need_value(v, infos_of) for v in a]
        bind = {}
        bind_static = {}
        for x, (pn, dt, dims) in zip(xs, f.params):
            if x.dt != dt or len(x.dims) != len(dims):
                raise Invalid("call argument type")
            for d, xd, xc in zip(dims, x.dims, x.shape):
                if is_static(d):
                    if is_static(xd) and xd != d:
                        raise Invalid("call static dim")
                    if xc != d:
                        raise Invalid("call static dim at run time")
                elif d != "?":
                    if d in bind:
                        if bind[d] != xc:
                            raise Invalid("call symbol at run time")
                    else:
                        bind[d] = xc
                        bind_static[d] = xd
        shapes = infer_function(f, [x.shape for x in xs], funcs, depth + 1,
                                None if sink is None else
                                sink.setdefault(f.name, {}), sink)
        res = []
        for (dt, dims), shp in zip(f.ret_types, shapes):
            sd = [d if is_static(d) else bind_static.get(d, "?") for d in dims]
            res.append(Info(dt, sd, shp))
    else:
        raise Invalid(f"unknown op {op}")
    if len(res) != len(s.res):
        raise Invalid("result count")
    for inf in res:
        if len(inf.dims) > MAX_RANK:
            raise Invalid("rank")
    if s.annot is not None and op not in ("constant", "iota"):
        if len(s.annot) != len(res):
            raise Invalid("annotation count")
        for (dt, dims), inf in zip(s.annot, res):
            check_compatible(dt, dims, inf, env)
    return res


def check_compatible(dt, dims, inf, env):
    """A written type (annotation or declared result) against the inferred
    one (language.md, annotations)."""
    if dt != inf.dt or len(dims) != len(inf.dims):
        raise Invalid("annotation type")
    for w, d, c in zip(dims, inf.dims, inf.shape):
        if w == "?":
            continue
        if d == "?":
            if is_static(w) and w != c:
                raise Invalid("refined dim at run time")
            if not is_static(w) and w in env and env[w] != c:
                raise Invalid("refined dim at run time")
            if not is_static(w) and w not in env:
                raise Invalid("unbound name in annotation")
            continue
        if w != d:
            raise Invalid("annotation dim")


def param_env(f, shapes):
    env = {}
    for (pn, dt, dims), shp in zip(f.params, shapes):
        if len(dims) != len(shp):
            raise Invalid("argument rank")
        for d, c in zip(dims, shp):
            if is_static(d):
                if d != c:
                    raise Invalid("argument static dim")
            elif d != "?":
                if env.setdefault(d, c) != c:
                    raise Invalid("argument symbol")
    return env


def infer_function(f, shapes, funcs, depth=0, infos=None, sink=None):
    """Concrete result shapes of `f` called with arguments of `shapes`;
    raises Invalid if any statement is invalid. `infos` (a dict), when
    given, receives every value's Info; `sink` ({function: infos}) those
    of the functions it calls."""
    env = param_env(f, shapes)
    vals = {} if infos is None else infos
    for (pn, dt, dims), shp in zip(f.params, shapes):
        if pn in vals and infos is None:
            raise Invalid("duplicate name")
        vals[pn] = Info(dt, dims, shp)

    def infos_of(name):
        if name not in vals:
            raise Invalid(f"undefined %{name}")
        return vals[name]

    for s in f.stmts:
        res = infer_stmt(s, infos_of, env, funcs, depth, sink)
        for r, inf in zip(s.res, res):
            if r in vals:
                raise Invalid("redefined")
            vals[r] = inf
    if not f.rets or len(f.rets) != len(f.ret_types):
        raise Invalid("returns")
    out = []
    for r, (dt, dims) in zip(f.rets, f.ret_types):
        inf = infos_of(r)
        check_compatible(dt, dims, inf, env)
        out.append(inf.shape)
    return out


def check_program(prog, sink=None):
    """Infos of main's values; raises Invalid. `sink`, when given, also
    receives {function name: infos} of every function."""
    f = prog.main_func()
    shapes = [tuple(np.shape(prog.inputs[p])) for p, _, _ in f.params]
    infos = {} if sink is None else sink.setdefault(f.name, {})
    infer_function(f, shapes, prog.funcs, 0, infos, sink)
    return infos


# ---------------------------------------------------------------- generator

SYMS = ["N", "M", "B", "S", "T", "L"]
EDGE_FLOATS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0,
               -1.0, 0.5, 1e-3, 1e4, -1e4, "max", "tiny", "big"]
LIT_FLOATS = [0.5, 2.0, -1.0, 0.0, -0.0, 3.0, 1e-3, 100.0, float("inf"),
              float("-inf"), float("nan"), -2.5]
LIT_INTS = [0, 1, -1, 2, 3, -3, 7, 127, -128]


def int_bounds(dt):
    bits = {"i64": 64, "i32": 32, "i8": 8}[dt]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


class Gen:
    """Generates one program from a seed (see the module comment)."""

    def __init__(self, seed, name="f", max_stmts=12):
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.max_stmts = max_stmts
        self.funcs = {}

    # -- small random helpers
    def r(self):
        return float(self.rng.random())

    def pick(self, seq, p=None):
        return seq[int(self.rng.choice(len(seq), p=p))]

    def rint(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def rand_dt(self, allowed=DTYPES):
        w = {"f32": 3, "f64": 1.5, "f16": 1.5, "bf16": 1.5, "i64": 1.5,
             "i32": 1.5, "i8": 1.2, "i1": 1}
        p = np.array([w[d] for d in allowed], dtype=float)
        return self.pick(list(allowed), p / p.sum())

    def rand_size(self):
        return self.pick([0, 1, 2, 3, 4, 5], [0.05, 0.22, 0.25, 0.23, 0.15,
                                               0.1])

    def rand_shape(self, lo=0, hi=None):
        rank = self.pick([0, 1, 2, 3, 4, 5], [0.12, 0.27, 0.3, 0.19, 0.09,
                                              0.03])
        rank = max(rank, lo) if hi is None else min(max(rank, lo), hi)
        for _ in range(20):
            shape = [self.rand_size() for _ in range(rank)]
            if int(np.prod(shape) if shape else 1) <= 240:
                return shape
        return [1] * rank

    # -- values of a function under construction
    def begin(self, fname, private):
        self.f = Func(fname, private)
        self.env = {}
        self.pool = {}          # name -> Info
        self.inputs = {}
        self.nval = 0
        self.roles = {}

    def fresh(self, prefix="v"):
        self.nval += 1
        return f"{prefix}{self.nval}"

    def form_dims(self, shape, keep=None):
        """Static dims for a parameter of concrete `shape`: sizes, `?` and
        symbols (an existing symbol of the same size, or a new one)."""
        dims = []
        for k, c in enumerate(shape):
            if keep is not None and keep[k] is not None:
                dims.append(keep[k])
                continue
            u = self.r()
            if u < 0.6:
                dims.append(c)
            elif u < 0.75:
                dims.append("?")
            else:
                same = [s for s, v in self.env.items() if v == c]
                free = [s for s in SYMS if s not in self.env]
                if same and (self.r() < 0.7 or not free):
                    dims.append(self.pick(same))
                elif free:
                    s = self.pick(free)
                    self.env[s] = c
                    dims.append(s)
                else:
                    dims.append(c)
        return dims

    def rand_values(self, dt, shape, role=None):
        n = int(np.prod(shape)) if shape else 1
        if role is not None:  # gather indices in [-m, m)
            m = role
            return self.rng.integers(-m, m, size=n).reshape(shape).astype(
                np.int64)
        if dt == "i1":
            return (self.rng.random(n) < 0.5).reshape(shape)
        if dt in INTS:
            lo, hi = int_bounds(dt)
            v = self.rng.integers(-6, 7, size=n).astype(np.int64)
            for i in range(n):
                if self.r() < 0.12:
                    v[i] = self.pick([lo, hi, 0, -1, lo + 1, hi - 1, 1])
            return v.reshape(shape)
        from kina_values import round_float, float_max, float_min_subnormal
        v = np.round(self.rng.uniform(-4, 4, size=n) * 8) / 8
        if self.r() < 0.5:
            v = self.rng.uniform(-4, 4, size=n)
        for i in range(n):
            if self.r() < 0.1:
                e = self.pick(EDGE_FLOATS)
                if e == "max":
                    e = float_max(dt) * self.pick([1, -1])
                elif e == "tiny":
                    e = float_min_subnormal(dt) * self.pick([1, -1, 3])
                elif e == "big":
                    e = self.pick([65504.0, 3e38, 1e30, -1e30])
                v[i] = e
        return round_float(v, dt).reshape(shape)

    def new_param(self, dt, shape, role=None, dims=None):
        name = self.fresh("a")
        dims = self.form_dims(shape) if dims is None else dims
        self.f.params.append((name, dt, tuple(dims)))
        self.pool[name] = Info(dt, dims, shape)
        self.inputs[name] = self.rand_values(dt, shape, role)
        if role is not None:
            self.roles[name] = role
        return name

    def choose(self, pred, make=None):
        """A pool value satisfying pred(Info), recent ones preferred, or
        a new parameter from make()."""
        cands = [n for n, i in self.pool.items() if pred(i)]
        if cands and (make is None or self.r() < 0.85):
            used = {a for s in self.f.stmts for a in s.args
                    if isinstance(a, str)}
            w = np.arange(1, len(cands) + 1, dtype=float) ** 1.5
            w *= np.array([1.0 if c in used else 4.0 for c in cands])
            return self.pick(cands, w / w.sum())
        return make() if make else None

    def any_value(self, dts=DTYPES, minrank=0):
        return self.choose(
            lambda i: i.dt in dts and len(i.dims) >= minrank,
            lambda: self.new_param(self.rand_dt(dts),
                                   self.rand_shape(lo=minrank)))

    def bcast_shape(self, shape):
        """A shape that broadcasts with `shape`."""
        sh = list(shape)
        if sh and self.r() < 0.3:
            sh = sh[self.rint(0, len(sh)):]
        sh = [1 if self.r() < 0.25 else (self.rint(2, 3) if c == 1 and
                                         self.r() < 0.2 else c) for c in sh]
        if self.r() < 0.1 and len(sh) < 5:
            sh = [self.rint(1, 3)] + sh
        return sh

    def lit(self, dt):
        if dt == "i1":
            return Lit(bool(self.r() < 0.5))
        if dt in INTS:
            v = self.pick(LIT_INTS)
            lo, hi = int_bounds(dt)
            if self.r() < 0.1:
                v = self.pick([lo, hi])
            return Lit(v)
        return Lit(self.pick(LIT_FLOATS))

    def partner(self, x, same_dt=True):
        """Second operand for a broadcasting op with x."""
        xi = self.pool[x]
        u = self.r()
        if u < 0.2:
            return self.lit(xi.dt)
        if u < 0.55:
            c = self.choose(lambda i: i.dt == xi.dt and _bc_ok(i, xi))
            if c:
                return c
        return self.new_param(xi.dt, self.bcast_shape(xi.shape))

    # -- statements
    def add_stmt(self, s):
        res = infer_stmt(s, lambda n: self.pool[n], self.env, self.funcs)
        if self.r() < 0.15 and s.op not in ("constant", "iota"):
            s.annot = [(i.dt, tuple(d if self.r() < 0.7 else "?"
                                    for d in i.dims)) for i in res]
        for r, inf in zip(s.res, res):
            self.pool[r] = inf
        self.f.stmts.append(s)

    def propose(self):
        ops = (["unary"] * 5 + ["binary"] * 6 + ["compare"] * 2 +
               ["select"] * 2 + ["cast"] * 4 + ["constant"] * 2 + ["iota"] +
               ["matmul"] * 2 + ["transpose", "reshape", "broadcast_to",
                                 "concat", "slice", "slice"] +
               ["gather"] * 2 + ["reduce"] * 4 + ["arg"] * 2 +
               ["softmax", "layer_norm", "rms_norm"] + ["call"])
        kind = self.pick(ops)
        res = [self.fresh()]
        if kind == "unary":
            x = self.any_value()
            dt = self.pool[x].dt
            if dt == "i1":
                return Stmt(res, "not", [x])
            if dt in INTS:
                return Stmt(res, self.pick(["neg", "abs"]), [x])
            op = self.pick(UNARY_FLOAT)
            attrs = {}
            if op == "gelu" and self.r() < 0.6:
                attrs["approximate"] = self.pick(["none", "tanh"])
            return Stmt(res, op, [x], attrs)
        if kind in ("binary", "compare"):
            x = self.any_value()
            dt = self.pool[x].dt
            if kind == "compare":
                op = self.pick(COMPARE)
            elif dt == "i1":
                op = self.pick(["add", "mul", "max", "min"])
            else:
                op = self.pick(BINARY)
            y = self.partner(x)
            args = [x, y] if self.r() < 0.7 else [y, x]
            return Stmt(res, op, args)
        if kind == "select":
            x = self.any_value()
            xi = self.pool[x]
            c = self.choose(lambda i: i.dt == "i1" and _bc_ok(i, xi),
                            lambda: self.new_param("i1", self.bcast_shape(
                                xi.shape)))
            if self.r() < 0.1:
                c = Lit(bool(self.r() < 0.5))
            y = self.partner(x)
            return Stmt(res, "select", [c] + ([x, y] if self.r() < 0.6
                                              else [y, x]))
        if kind == "cast":
            x = self.any_value()
            return Stmt(res, "cast", [x], {"to": DT(self.rand_dt())})
        if kind == "constant":
            dt = self.rand_dt()
            shape = self.rand_shape(hi=3)
            n = int(np.prod(shape)) if shape else 1
            if self.r() < 0.4 or n == 0 or (n == 0 and len(shape) != 1):
                arg = self.lit(dt)
            else:
                vals = self.rand_values(dt, [n])
                arg = Dense([bool(v) if dt == "i1" else
                             (int(v) if dt in INTS else float(v))
                             for v in vals])
            return Stmt(res, "constant", [arg], {}, [(dt, tuple(shape))])
        if kind == "iota":
            dt = self.rand_dt([d for d in DTYPES if d != "i1"])
            shape = self.rand_shape(lo=1, hi=3)
            dims = list(shape)
            for k, c in enumerate(shape):
                same = [s for s, v in self.env.items() if v == c]
                if same and self.r() < 0.5:
                    dims[k] = self.pick(same)
            attrs = {}
            if self.r() < 0.7:
                attrs["axis"] = self.rint(-len(dims), len(dims) - 1)
            return Stmt(res, "iota", [], attrs, [(dt, tuple(dims))])
        if kind == "matmul":
            dts = [d for d in DTYPES if d != "i1"]
            x = self.any_value(dts, minrank=1)
            xi = self.pool[x]
            xs = list(xi.shape)
            k = xs[-1]
            if len(xs) == 1:
                ys = [k] if self.r() < 0.3 else [k, self.rint(0, 4)]
            else:
                batch = self.bcast_shape(xs[:-2]) if self.r() < 0.7 else []
                ys = batch + [k, self.rint(0, 4)]
                if self.r() < 0.15:
                    ys = [k]
            y = self.choose(lambda i: i.dt == xi.dt and len(i.dims) >= 1 and
                            i.shape[0 if len(i.dims) == 1 else -2] == k,
                            lambda: self.new_param(xi.dt, ys))
            return Stmt(res, "matmul", [x, y])
        if kind == "transpose":
            x = self.any_value()
            r = len(self.pool[x].dims)
            attrs = {}
            if self.r() < 0.8:
                perm = list(self.rng.permutation(r))
                attrs["perm"] = [int(p) - (r if self.r() < 0.3 else 0)
                                 for p in perm]
            return Stmt(res, "transpose", [x], attrs)
        if kind == "reshape":
            x = self.any_value()
            xi = self.pool[x]
            count = int(np.prod(xi.shape)) if xi.shape else 1
            shape = self.factor(count)
            ents = list(shape)
            for k, c in enumerate(shape):
                same = [s for s, v in self.env.items() if v == c]
                if same and self.r() < 0.3:
                    ents[k] = Sym(self.pick(same))
            if ents and self.r() < 0.4:
                ents[self.rint(0, len(ents) - 1)] = -1
            return Stmt(res, "reshape", [x], {"shape": ents})
        if kind == "broadcast_to":
            x = self.any_value()
            xs = list(self.pool[x].shape)
            tgt = [c if c != 1 or self.r() < 0.5 else self.rint(0, 3)
                   for c in xs]
            while len(tgt) < 5 and self.r() < 0.4:
                tgt = [self.rint(0, 3)] + tgt
            ents = list(tgt)
            for k, c in enumerate(tgt):
                same = [s for s, v in self.env.items() if v == c]
                if same and self.r() < 0.3:
                    ents[k] = Sym(self.pick(same))
            return Stmt(res, "broadcast_to", [x], {"shape": ents})
        if kind == "concat":
            x = self.any_value(minrank=1)
            xi = self.pool[x]
            r = len(xi.dims)
            k = self.rint(-r, r - 1)
            args = [x]
            for _ in range(self.rint(0, 2)):
                if self.r() < 0.3:
                    args.append(x)
                    continue
                sh = list(xi.shape)
                sh[k] = self.rint(0, 3)
                keep = [None if j == k % r else
                        (xi.dims[j] if self.r() < 0.5 else None)
                        for j in range(r)]
                args.append(self.new_param(xi.dt, sh, dims=self.form_dims(
                    sh, keep)))
            attrs = {"axis": k} if (k != 0 or self.r() < 0.5) else {}
            return Stmt(res, "concat", args, attrs)
        if kind == "slice":
            x = self.any_value(minrank=1)
            xs = self.pool[x].shape
            start, stop, step = [], [], []
            for c in xs:
                u = self.r()
                if u < 0.15:
                    b, e, t = 0, INT64_MAX, 1
                elif u < 0.25:
                    b, e, t = -1, INT64_MIN, -1
                else:
                    t = self.pick([1, 1, 2, -1, -2, 3])
                    b = self.rint(-c - 2, c + 2)
                    e = self.rint(-c - 2, c + 2)
                    if self.r() < 0.1:
                        e = INT64_MAX if t > 0 else INT64_MIN
                start.append(b)
                stop.append(e)
                step.append(t)
            attrs = {"start": start, "stop": stop}
            if any(t != 1 for t in step) or self.r() < 0.3:
                attrs["step"] = step
            return Stmt(res, "slice", [x], attrs)
        if kind == "gather":
            x = self.any_value(minrank=1)
            xi = self.pool[x]
            r = len(xi.dims)
            k = self.rint(-r, r - 1)
            m = xi.shape[k]
            if m == 0:
                raise Invalid("gather over size 0")
            if self.r() < 0.2:
                idx = Lit(self.rint(-m, m - 1))
            else:
                idx = self.new_param(self.pick(["i32", "i64"]),
                                     self.rand_shape(hi=2), role=m)
            attrs = {"axis": k} if (k != 0 or self.r() < 0.5) else {}
            return Stmt(res, "gather", [x, idx], attrs)
        if kind == "reduce":
            x = self.any_value()
            xi = self.pool[x]
            ops = ["reduce_max", "reduce_min"]
            if xi.dt != "i1":
                ops += ["reduce_sum", "reduce_prod", "reduce_sum"]
            if xi.dt in FLOATS:
                ops += ["reduce_mean"]
            r = len(xi.dims)
            attrs = {}
            if r and self.r() < 0.75:
                axes = [int(v) for v in self.rng.permutation(r)[
                    :self.rint(1, r)]]
                attrs["axes"] = [v - r if self.r() < 0.3 else v for v in axes]
            if self.r() < 0.4:
                attrs["keepdims"] = bool(self.r() < 0.6)
            return Stmt(res, self.pick(ops), [x], attrs)
        if kind == "arg":
            x = self.any_value(minrank=1)
            r = len(self.pool[x].dims)
            attrs = {}
            if self.r() < 0.7:
                attrs["axis"] = self.rint(-r, r - 1)
            if self.r() < 0.4:
                attrs["keepdims"] = bool(self.r() < 0.6)
            return Stmt(res, self.pick(ARG), [x], attrs)
        if kind == "softmax":
            x = self.any_value(FLOATS, minrank=1)
            attrs = {}
            if self.r() < 0.6:
                r = len(self.pool[x].dims)
                attrs["axis"] = self.rint(-r, r - 1)
            return Stmt(res, self.pick(["softmax", "log_softmax"]), [x], attrs)
        if kind in ("layer_norm", "rms_norm"):
            x = self.any_value(FLOATS, minrank=1)
            xi = self.pool[x]
            r = len(xi.dims)
            k = self.rint(-r, r - 1) if self.r() < 0.6 else -1
            attrs = {} if k == -1 and self.r() < 0.5 else {"axis": k}
            if self.r() < 0.4:
                attrs["epsilon"] = self.pick([0, 1e-3, 0.5, 1e-5, 1e-6])
            tail = list(xi.shape[k % r:])
            keep = [d if self.r() < 0.5 else None for d in xi.dims[k % r:]]
            args = [x] + [self.new_param(xi.dt, tail,
                                         dims=self.form_dims(tail, keep))
                          for _ in range(2 if kind == "layer_norm" else 1)]
            return Stmt(res, kind, args, attrs)
        if kind == "call":
            return self.make_call(res)
        raise AssertionError(kind)

    def factor(self, count):
        if count == 0:
            r = self.rint(1, 3)
            sh = [self.rint(0, 3) for _ in range(r)]
            sh[self.rint(0, r - 1)] = 0
            return sh
        dims = []
        rest = count
        while rest > 1 and len(dims) < 4:
            divs = [d for d in range(2, rest + 1) if rest % d == 0]
            d = self.pick(divs)
            dims.append(d)
            rest //= d
        if len(dims) < 5 and self.r() < 0.3:
            dims.insert(self.rint(0, len(dims)), 1)
        order = list(self.rng.permutation(len(dims)))
        return [dims[i] for i in order]

    def make_call(self, res):
        if self.f.private or self.depth > 0:
            raise Invalid("no nested helpers")
        nargs = self.rint(1, 2)
        args = [self.any_value() for _ in range(nargs)]
        # Save the caller's state, build the helper, restore.
        saved = (self.f, self.env, self.pool, self.inputs, self.nval,
                 self.roles)
        hname = f"{self.name}_h{len(self.funcs)}"
        self.begin(hname, True)
        self.depth = 1
        try:
            for a in args:
                ai = saved[2][a]
                dims = []
                for c in ai.shape:
                    u = self.r()
                    if u < 0.5:
                        dims.append(c)
                    elif u < 0.7:
                        dims.append("?")
                    else:
                        same = [s for s, v in self.env.items() if v == c]
                        free = [s for s in SYMS if s not in self.env]
                        if same:
                            dims.append(self.pick(same))
                        else:
                            s = self.pick(free)
                            self.env[s] = c
                            dims.append(s)
                self.new_param(ai.dt, ai.shape, dims=dims)
            self.body(self.rint(1, 5), self.rint(1, 2))
            helper = self.f
        finally:
            self.depth = 0
            (self.f, self.env, self.pool, self.inputs, self.nval,
             self.roles) = saved
        self.funcs[hname] = helper
        res = [self.fresh() for _ in helper.rets]
        return Stmt(res, "call", args, callee=hname)

    def body(self, n_stmts, n_rets):
        tries = 0
        while len(self.f.stmts) < n_stmts and tries < n_stmts * 25:
            tries += 1
            nval = self.nval
            npar = len(self.f.params)
            nfuncs = len(self.funcs)
            try:
                s = self.propose()
                self.add_stmt(s)
            except Invalid:
                # Undo parameters and helpers the failed proposal added.
                for pn, _, _ in self.f.params[npar:]:
                    self.pool.pop(pn, None)
                    self.inputs.pop(pn, None)
                del self.f.params[npar:]
                for k in list(self.funcs)[nfuncs:]:
                    del self.funcs[k]
                self.nval = nval
                used = {d for _, _, dims in self.f.params for d in dims}
                for sym in list(self.env):
                    if sym not in used:
                        del self.env[sym]
        if not self.f.stmts:
            x = self.any_value()
            self.add_stmt(Stmt([self.fresh()], "cast", [x],
                               {"to": DT(self.pool[x].dt)}))
        results = [r for s in self.f.stmts for r in s.res]
        used = {a for s in self.f.stmts for a in s.args if isinstance(a, str)}
        sinks = [r for r in results if r not in used]
        rets = sinks[-max(n_rets, 4):] if sinks else [results[-1]]
        if results[-1] not in rets:
            rets = rets[1:] + [results[-1]]
        self.f.rets = rets
        for r in rets:
            inf = self.pool[r]
            if self.r() < 0.3:
                dims = tuple(inf.dims)
            else:
                dims = tuple("?" for _ in inf.dims)
            self.f.ret_types.append((inf.dt, dims))

    def program(self):
        self.depth = 0
        self.begin(self.name, False)
        n = self.rint(3, self.max_stmts)
        self.body(n, self.rint(1, 3))
        main = self.f
        funcs = dict(self.funcs)
        funcs[main.name] = main
        # Keep only the parameters the body still uses (undone proposals).
        return Program(main.name, funcs, dict(self.inputs))


def _bc_ok(a, b):
    try:
        bcast([a, b])
        return True
    except Invalid:
        return False


def generate(seed, name="f", max_stmts=12):
    """A valid random program for `seed` (deterministic)."""
    for k in range(100):
        g = Gen([seed, k], name, max_stmts)
        try:
            prog = g.program()
            check_program(prog)
            return prog
        except Invalid:
            continue
    raise RuntimeError(f"no valid program for seed {seed}")
