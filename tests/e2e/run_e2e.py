#!/usr/bin/python3
"""End-to-end tests of kinac: compile Kina IR, call it from C, check it.

Each case below is a small `.kir` module, an exported function to call, and
one or more runs (input arrays from a fixed NumPy seed, and either the
expected outputs, computed independently with NumPy in float64 and then cast
to the result type, or an expected non-zero status and message). For each
case the script writes the module, runs `kinac case.kir -o case.o` and
`kinac case.kir --emit=header -o case.h`, generates a C99 harness that
includes the header, reads every input from raw little-endian `.bin` files,
builds descriptors with the run-time shapes (`aligned` 64 bytes after
`allocated`, as for a view into a larger buffer; offset 0; row-major strides),
calls `kina_<fn>`, writes each result's sizes and bytes (walking its strides),
frees each result with `runtime_free` and exits with the entry's status; it
also checks with runtime_live_buffer_count() that no runtime buffer outlives
the call once its results are freed (on failures too). It links the harness
with `cc harness.c case.o libkina_runtime.a --libs` (default `-lstdc++ -lm`:
the runtime is C++ inside; it loads CUDA at run time, so nothing CUDA is linked), runs it once
per run and compares. An error status must come with a non-empty, printable
kina_last_error() (and, where the case says, a message naming the dim or the
sizes). Some cases also check with `nm` which symbols case.o defines.
Tolerances (|got - ref| <= tol * max(1, |ref|), NaN must match NaN,
infinities must be equal): f64 1e-12, f32 1e-5, f16 1e-3; integers and i1
exact (an i1 byte must be 0 or 1). A case may set its own tolerance (casts
compare exactly; long f32 sums get 1e-4). Cases are independent: one that
fails to compile does not stop the others. `--digits SAMPLE_DIR` instead
builds and runs the digits sample (samples/digits) with the generated header
and checks its exit code and last line. Prints `PASS name` / `FAIL name`
per case, then `N passed, N failed`; exits 1 if anything failed. Needs only
NumPy. `--export-cases DIR` instead writes the cases' runs in the format of
the conformance suite (tests/conformance/cases: case.kir, in<k>.npy,
out<k>.npy, case.json), so that run_conformance.py can compile them for
another target and replay them with kina-run (scripts/gpu-artefacts.sh does
this for --target=cuda); it compiles and runs nothing.
"""

import argparse
import concurrent.futures
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import traceback
import zlib

import numpy as np

# --- Element types -----------------------------------------------------------

NP_OF = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "i64": np.int64,
    "i32": np.int32,
    "i8": np.int8,
    "i1": np.bool_,
}
KIR_OF = {np.dtype(v): k for k, v in NP_OF.items()}
DEFAULT_TOL = {"f64": 1e-12, "f32": 1e-5, "f16": 1e-3}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def kir_type(a):
    return KIR_OF[np.dtype(a.dtype)]


class Run:
    """One call: inputs, and either expected outputs or an expected failure.

    `status` is the expected status (0: `expected` holds the outputs);
    `message` is a regex that kina_last_error() must match (case-insensitive)
    when status != 0; `tol` optionally maps a result index to a tolerance."""

    def __init__(self, inputs, expected=None, status=0, message=None,
                 tol=None):
        self.inputs = [np.asarray(a) for a in inputs]
        self.expected = [np.asarray(a) for a in (expected or [])]
        self.status = status
        self.message = message
        self.tol = tol or {}


class Case:
    """A module, the exported function to call, and its runs. `results` gives
    the result types as (element type, rank) when no run has outputs;
    `exported`/`hidden` are C symbols that case.o must / must not define.
    `prefix` is passed as --symbol-prefix (the entry is kina_<prefix><fn>);
    `others` are more (kir, kinac flags) modules compiled to case<k>.o and
    case<k>.h, whose headers the harness includes and whose objects it links
    too. `reject_ok` is a regex: kinac may instead refuse the module (exit 1)
    with a diagnostic matching it, which also passes. `undefined_ok` is a
    regex that every undefined symbol of every object (`nm -u`) must match."""

    def __init__(self, kir, fn, runs, results=None, exported=(), hidden=(),
                 prefix="", others=(), reject_ok=None, undefined_ok=None):
        self.kir = kir
        self.fn = fn
        self.runs = runs
        self.exported = list(exported)
        self.hidden = list(hidden)
        self.prefix = prefix
        self.others = list(others)
        self.reject_ok = reject_ok
        self.undefined_ok = undefined_ok
        if results is None:
            ok = [r for r in runs if r.status == 0]
            results = [(kir_type(e), e.ndim) for e in ok[0].expected]
        self.results = results
        self.args = [(kir_type(a), a.ndim) for a in runs[0].inputs]
        # Self-check of the case definition against the written signature.
        sig_args, sig_results = parse_signature(kir, fn)
        if (sig_args, sig_results) != (self.args, self.results):
            raise ValueError(f"case inputs/outputs {self.args} -> "
                             f"{self.results} do not match the signature "
                             f"{sig_args} -> {sig_results}")


_TYPE = r"([a-z0-9]+)(?:\[([^\]]*)\])?"


def parse_signature(kir, fn):
    """(element type, rank) of the params and results of `func @fn`."""
    m = re.search(r"func\s+@" + re.escape(fn) +
                  r"\s*\((.*?)\)\s*->\s*(.*?)\s*\{", kir, re.S)
    if not m:
        raise ValueError(f"no func @{fn} in the case's module")

    def rank(dims):
        return len([d for d in (dims or "").split(",") if d.strip()])

    args = [(t, rank(d)) for t, d in
            re.findall(r"%[\w.]+\s*:\s*" + _TYPE, m.group(1))]
    results = [(t, rank(d)) for t, d in re.findall(_TYPE, m.group(2))]
    return args, results


CASES = []  # (name, builder(rng) -> Case)


def case(name):
    """Registers a case builder; each gets its own seeded generator."""

    def register(builder):
        CASES.append((name, builder))
        return builder

    return register


def uniform(rng, shape, lo, hi, dtype=np.float32):
    """Uniform values in [lo, hi), none of them within 1e-3 of zero."""
    x = rng.uniform(lo, hi, size=shape)
    x = np.where(np.abs(x) < 1e-3, (lo + hi) / 2 or 0.5, x)
    return x.astype(dtype)


def small_ints(rng, shape, lo, hi, dtype=np.float32):
    """Integers in [lo, hi] as `dtype` (to get ties and equal values)."""
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def f64(a):
    return np.asarray(a, dtype=np.float64)


def wrap(values, bits):
    """Wraps Python ints to two's complement of `bits` bits."""
    m = 1 << bits
    return [((v + (m >> 1)) % m) - (m >> 1) for v in values]


# --- Unary float ops ---------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) *
                                    (x + 0.044715 * x**3)))


UNARY = [  # op, attrs, input range, reference (float64 -> float64)
    ("neg", "", (-5, 5), np.negative),
    ("abs", "", (-5, 5), np.abs),
    ("exp", "", (-5, 5), np.exp),
    ("log", "", (0.05, 20), np.log),
    ("sqrt", "", (0.01, 20), np.sqrt),
    ("rsqrt", "", (0.01, 20), lambda x: 1.0 / np.sqrt(x)),
    ("tanh", "", (-4, 4), np.tanh),
    ("sigmoid", "", (-10, 10), _sigmoid),
    ("relu", "", (-3, 3), lambda x: np.maximum(x, 0.0)),
    ("gelu", "", (-4, 4), _gelu),
    ("gelu", ' {approximate = "tanh"}', (-4, 4), _gelu_tanh),
    ("erf", "", (-3, 3), _erf),
    ("sin", "", (-6, 6), np.sin),
    ("cos", "", (-6, 6), np.cos),
    ("floor", "", (-10, 10), np.floor),
    ("ceil", "", (-10, 10), np.ceil),
]


def _unary_case(op, attrs, rng_range, ref, dt, dims):
    def build(rng):
        kir = (f"func @f(%x: {dt}[{dims}]) -> {dt}[{dims}] {{\n"
               f"  %y = {op} %x{attrs}\n"
               f"  return %y\n}}\n")
        runs = []
        shapes = [(7, 5), (1, 5)] if dims == "N, 5" else [(3, 4)]
        for shape in shapes:
            x = uniform(rng, shape, *rng_range, dtype=NP_OF[dt])
            runs.append(Run([x], [ref(f64(x)).astype(NP_OF[dt])]))
        return Case(kir, "f", runs)

    return build


for _op, _attrs, _range, _ref in UNARY:
    _suffix = "_tanh" if "tanh" in _attrs else ""
    case(f"unary_f32_{_op}{_suffix}")(
        _unary_case(_op, _attrs, _range, _ref, "f32", "N, 5"))
    if _op not in ("neg", "abs", "relu", "floor", "ceil"):
        case(f"unary_f64_{_op}{_suffix}")(
            _unary_case(_op, _attrs, _range, _ref, "f64", "3, 4"))


@case("unary_i32_neg_abs_wrap")
def _(rng):
    x = np.array([INT32_MIN, INT32_MIN + 1, -7, -1, 1, 5, INT32_MAX],
                 dtype=np.int32)
    vals = [int(v) for v in x]
    kir = ("func @f(%x: i32[?]) -> (i32[?], i32[?]) {\n"
           "  %n = neg %x\n  %a = abs %x\n  return %n, %a\n}\n")
    return Case(kir, "f", [Run([x], [
        np.array(wrap([-v for v in vals], 32), dtype=np.int32),
        np.array(wrap([abs(v) for v in vals], 32), dtype=np.int32)])])


# --- Binary ops and broadcasting ---------------------------------------------


@case("binary_static_broadcast")
def _(rng):
    a = uniform(rng, (3, 1, 4), -2, 2)
    b = uniform(rng, (5, 1), 0.5, 3)
    kir = ("func @f(%a: f32[3, 1, 4], %b: f32[5, 1]) -> (f32[3, 5, 4], "
           "f32[3, 5, 4], f32[3, 5, 4], f32[3, 5, 4]) {\n"
           "  %s = add %a, %b\n  %d = sub %a, %b\n  %m = mul %a, %b\n"
           "  %q = div %a, %b : f32[3, 5, 4]\n  return %s, %d, %m, %q\n}\n")
    A, B = f64(a), f64(b)
    out = [A + B, A - B, A * B, A / B]
    return Case(kir, "f", [Run([a, b], [o.astype(np.float32) for o in out])])


@case("binary_symbolic_broadcast_literal")
def _(rng):
    kir = ("func @f(%a: f32[N, 4], %b: f32[4]) -> f32[N, 4] {\n"
           "  %c = mul %a, %b\n  %d = add %c, 0.5\n  return %d\n}\n")
    runs = []
    for n in (5, 1, 0):
        a = uniform(rng, (n, 4), -3, 3)
        b = uniform(rng, (4,), -3, 3)
        runs.append(Run([a, b], [(f64(a) * f64(b) + 0.5).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("binary_dynamic_broadcast")
def _(rng):
    kir = ("func @f(%a: f32[?, ?], %b: f32[?, ?]) -> f32[?, ?] {\n"
           "  %d = sub %a, %b\n  return %d\n}\n")
    runs = []
    # b's first ? is 1 and stretches; b's second ? is 1; both stretch; equal.
    for sa, sb in [((3, 4), (1, 4)), ((3, 4), (3, 1)), ((1, 4), (3, 1)),
                   ((3, 4), (3, 4))]:
        a = uniform(rng, sa, -3, 3)
        b = uniform(rng, sb, -3, 3)
        runs.append(Run([a, b], [(f64(a) - f64(b)).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("binary_dynamic_rank_broadcast")
def _(rng):
    kir = ("func @f(%a: f32[?], %b: f32[2, ?]) -> f32[2, ?] {\n"
           "  %s = add %a, %b\n  return %s\n}\n")
    runs = []
    for na, nb in [(1, 5), (5, 5), (3, 1)]:
        a = uniform(rng, (na,), -3, 3)
        b = uniform(rng, (2, nb), -3, 3)
        runs.append(Run([a, b], [(f64(a) + f64(b)).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("binary_pow_max_min_nan")
def _(rng):
    a = uniform(rng, (6, 3), 0.2, 3)
    b = uniform(rng, (3,), -2, 2)
    a[1, 2] = np.nan
    b[0] = np.nan
    kir = ("func @f(%a: f32[N, 3], %b: f32[3]) -> (f32[N, 3], f32[N, 3], "
           "f32[N, 3]) {\n"
           "  %p = pow %a, %b\n  %x = max %a, %b\n  %n = min %a, %b\n"
           "  return %p, %x, %n\n}\n")
    A, B = f64(a), f64(b)
    out = [np.power(A, B), np.maximum(A, B), np.minimum(A, B)]
    return Case(kir, "f", [Run([a, b], [o.astype(np.float32) for o in out])])


@case("binary_f64")
def _(rng):
    a = uniform(rng, (4, 3), 0.1, 5, np.float64)
    b = uniform(rng, (4, 1), -3, 3, np.float64)
    kir = ("func @f(%a: f64[4, 3], %b: f64[4, 1]) -> "
           "(f64[4, 3], f64[4, 3]) {\n"
           "  %q = div %a, %b\n  %p = pow %a, %b\n  return %q, %p\n}\n")
    return Case(kir, "f", [Run([a, b], [a / b, np.power(a, b)])])


# --- Integer arithmetic ------------------------------------------------------


def _floor_div(a, b):
    return 0 if b == 0 else a // b  # Python's // floors, like the spec


def _floor_mod(a, b):
    return 0 if b == 0 else a % b  # Python's % takes the divisor's sign


@case("int_div_mod_i32")
def _(rng):
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (1, 5),
             (-1, 5), (1, -5), (0, 3), (5, 0), (-5, 0), (0, 0),
             (INT32_MIN, -1), (INT32_MIN, 1), (INT32_MAX, -1), (INT32_MIN, 7),
             (INT32_MAX, INT32_MIN)]
    extra = rng.integers(-1000, 1000, size=(2, 14))
    pairs += [(int(x), int(y)) for x, y in zip(*extra)]
    a = np.array([p[0] for p in pairs], dtype=np.int32)
    b = np.array([p[1] for p in pairs], dtype=np.int32)
    kir = ("func @f(%a: i32[N], %b: i32[N]) -> (i32[N], i32[N]) {\n"
           "  %q = div %a, %b\n  %r = mod %a, %b\n  return %q, %r\n}\n")
    q = wrap([_floor_div(x, y) for x, y in pairs], 32)
    r = wrap([_floor_mod(x, y) for x, y in pairs], 32)
    return Case(kir, "f", [Run([a, b], [np.array(q, np.int32),
                                        np.array(r, np.int32)])])


@case("int_div_mod_i64_broadcast")
def _(rng):
    a = rng.integers(-50, 50, size=(4, 1)).astype(np.int64)
    b = np.array([3, -3, 0, 7, -1], dtype=np.int64)
    a[0, 0] = -(2**63)
    kir = ("func @f(%a: i64[4, 1], %b: i64[5]) -> (i64[4, 5], i64[4, 5]) {\n"
           "  %q = div %a, %b\n  %r = mod %a, %b\n  return %q, %r\n}\n")
    A = [[int(v) for v in row] for row in a]
    q = [[wrap([_floor_div(r[0], int(y))], 64)[0] for y in b] for r in A]
    m = [[wrap([_floor_mod(r[0], int(y))], 64)[0] for y in b] for r in A]
    return Case(kir, "f", [Run([a, b], [np.array(q, np.int64),
                                        np.array(m, np.int64)])])


@case("int_add_sub_mul_wrap_i32")
def _(rng):
    a = np.array([INT32_MAX, INT32_MIN, 123456, -99999, 65536], np.int32)
    b = np.array([1, -1, 54321, 77777, 65536], np.int32)
    kir = ("func @f(%a: i32[5], %b: i32[5]) -> (i32[5], i32[5], i32[5]) {\n"
           "  %s = add %a, %b\n  %d = sub %a, %b\n  %m = mul %a, %b\n"
           "  return %s, %d, %m\n}\n")
    A, B = [int(v) for v in a], [int(v) for v in b]
    out = [wrap([x + y for x, y in zip(A, B)], 32),
           wrap([x - y for x, y in zip(A, B)], 32),
           wrap([x * y for x, y in zip(A, B)], 32)]
    return Case(kir, "f", [Run([a, b], [np.array(o, np.int32) for o in out])])


@case("int_pow_i32")
def _(rng):
    pairs = [(2, 10), (-3, 3), (5, 0), (0, 0), (1, -4), (-1, -3), (-1, -4),
             (2, -1), (0, -2), (7, 2), (2, 31), (3, 21)]
    a = np.array([p[0] for p in pairs], np.int32)
    b = np.array([p[1] for p in pairs], np.int32)

    def ipow(x, y):
        if y < 0:
            return 1 if x == 1 else ((-1) ** (-y) if x == -1 else 0)
        return x**y

    kir = "func @f(%a: i32[?], %b: i32[?]) -> i32[?] {\n" \
          "  %p = pow %a, %b\n  return %p\n}\n"
    return Case(kir, "f", [Run([a, b], [np.array(
        wrap([ipow(x, y) for x, y in pairs], 32), np.int32)])])


# --- Compare and select ------------------------------------------------------


@case("compare_select")
def _(rng):
    kir = ("func @f(%a: f32[N, 4], %b: f32[4]) -> (i1[N, 4], i1[N, 4], "
           "i1[N, 4], i1[N, 4], i1[N, 4], i1[N, 4], f32[N, 4]) {\n"
           "  %lt = lt %a, %b\n  %le = le %a, %b\n  %gt = gt %a, %b\n"
           "  %ge = ge %a, %b\n  %eq = eq %a, %b\n  %ne = ne %a, %b\n"
           "  %s = select %lt, %a, %b\n"
           "  return %lt, %le, %gt, %ge, %eq, %ne, %s\n}\n")
    runs = []
    for n in (6, 1):
        a = small_ints(rng, (n, 4), -2, 2)
        b = small_ints(rng, (4,), -2, 2)
        A, B = f64(a), f64(b)
        out = [A < B, A <= B, A > B, A >= B, A == B, A != B]
        sel = np.where(A < B, A, B).astype(np.float32)
        runs.append(Run([a, b], out + [sel]))
    return Case(kir, "f", runs)


@case("compare_nan")
def _(rng):
    a = np.array([np.nan, 1.0, np.nan, 2.0, -np.inf], np.float32)
    b = np.array([np.nan, np.nan, 1.0, 2.0, -np.inf], np.float32)
    kir = ("func @f(%a: f32[5], %b: f32[5]) -> (i1[5], i1[5], i1[5], i1[5]) "
           "{\n  %eq = eq %a, %b\n  %ne = ne %a, %b\n  %lt = lt %a, %b\n"
           "  %ge = ge %a, %b\n  return %eq, %ne, %lt, %ge\n}\n")
    A, B = f64(a), f64(b)
    with np.errstate(invalid="ignore"):
        out = [A == B, A != B, A < B, A >= B]
    return Case(kir, "f", [Run([a, b], out)])


@case("compare_i64_signed")
def _(rng):
    a = rng.integers(-5, 5, size=(3, 4)).astype(np.int64)
    b = rng.integers(-5, 5, size=(3, 1)).astype(np.int64)
    a[0, 0], b[0, 0] = -(2**63), 2**63 - 1
    kir = ("func @f(%a: i64[3, 4], %b: i64[3, 1]) -> (i1[3, 4], i1[3, 4]) {\n"
           "  %lt = lt %a, %b\n  %ge = ge %a, %b\n  return %lt, %ge\n}\n")
    return Case(kir, "f", [Run([a, b], [a < b, a >= b])])


@case("select_three_way_broadcast")
def _(rng):
    kir = ("func @f(%c: i1[N, 1], %a: f32[1, 4], %b: f32) -> f32[N, 4] {\n"
           "  %s = select %c, %a, %b\n  return %s\n}\n")
    c = np.array([[True], [False], [True]])
    a = uniform(rng, (1, 4), -3, 3)
    b = np.array(7.25, dtype=np.float32)
    ref = np.where(c, f64(a), f64(b)).astype(np.float32)
    return Case(kir, "f", [Run([c, a, b], [ref])])


# --- Casts -------------------------------------------------------------------


def _f2i(values, bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    out = []
    for v in values:
        v = float(v)
        if math.isnan(v):
            out.append(0)
        elif v >= hi:
            out.append(hi)
        elif v <= lo:
            out.append(lo)
        else:
            out.append(int(v))  # truncates toward zero
    return out


@case("cast_f32_to_int_saturate")
def _(rng):
    x = np.array([1.5, -1.5, 2.9, -2.9, 0.4, -0.4, 3e9, -3e9, np.nan, np.inf,
                  -np.inf, 2147483520.0, -2147483648.0, 127.9, -128.9, 300.0,
                  -300.0, 1e-30], np.float32)
    x = np.concatenate([x, uniform(rng, (6,), -100, 100)])
    kir = ("func @f(%x: f32[N]) -> (i32[N], i8[N], i64[N]) {\n"
           "  %a = cast %x {to = i32}\n  %b = cast %x {to = i8}\n"
           "  %c = cast %x {to = i64}\n  return %a, %b, %c\n}\n")
    return Case(kir, "f", [Run([x], [np.array(_f2i(x, 32), np.int32),
                                     np.array(_f2i(x, 8), np.int8),
                                     np.array(_f2i(x, 64), np.int64)])])


@case("cast_i32_to_f32")
def _(rng):
    vals = [0, 1, -1, 16777216, 16777217, 16777218, 16777219, -16777217,
            INT32_MAX, INT32_MIN, 123456789]
    vals += [int(v) for v in rng.integers(-10**9, 10**9, size=8)]
    x = np.array(vals, np.int32)
    # int -> float64 is exact for i32: one float64 -> float32 rounding (RNE).
    ref = np.array([float(v) for v in vals], np.float64).astype(np.float32)
    kir = "func @f(%x: i32[?]) -> f32[?] {\n" \
          "  %y = cast %x {to = f32}\n  return %y\n}\n"
    return Case(kir, "f", [Run([x], [ref], tol={0: 0.0})])


@case("cast_f32_to_f16")
def _(rng):
    x = np.array([0.0, 1.0, -2.5, 65504.0, 65519.99, 65520.0, 70000.0, -1e6,
                  1e-8, 6e-8, 5.96e-8, 3e-5, 1.00048828125, 1.00146484375,
                  np.nan, np.inf, -np.inf, 0.1, 1.0 / 3.0], np.float32)
    x = np.concatenate([x, uniform(rng, (5,), -1000, 1000)])
    with np.errstate(over="ignore"):
        ref = f64(x).astype(np.float16)  # IEEE round to nearest, ties to even
    kir = "func @f(%x: f32[?]) -> f16[?] {\n" \
          "  %y = cast %x {to = f16}\n  return %y\n}\n"
    return Case(kir, "f", [Run([x], [ref], tol={0: 0.0})])


@case("cast_f16_to_f32_f64_to_f32")
def _(rng):
    h = np.array([0.0, -1.5, 65504.0, 6e-8, np.inf, np.nan, 0.333], np.float16)
    d = np.array([1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, 1e39, -1e-50, 0.1,
                  np.nan], np.float64)
    kir = ("func @f(%h: f16[7], %d: f64[6]) -> (f32[7], f32[6]) {\n"
           "  %a = cast %h {to = f32}\n  %b = cast %d {to = f32}\n"
           "  return %a, %b\n}\n")
    with np.errstate(over="ignore"):
        refs = [f64(h).astype(np.float32), d.astype(np.float32)]
    return Case(kir, "f", [Run([h, d], refs, tol={0: 0.0, 1: 0.0})])


@case("cast_to_i1_and_back")
def _(rng):
    x = np.array([0.0, -0.0, 1.0, -3.5, np.nan, np.inf, 1e-40, 0.25],
                 np.float32)
    i = np.array([0, 1, -1, 256, INT32_MIN, 0, 2, 0], np.int32)
    kir = ("func @f(%x: f32[8], %i: i32[8]) -> (i1[8], i1[8], f32[8], "
           "i32[8]) {\n"
           "  %a = cast %x {to = i1}\n  %b = cast %i {to = i1}\n"
           "  %c = cast %a {to = f32}\n  %d = cast %b {to = i32}\n"
           "  return %a, %b, %c, %d\n}\n")
    a = np.array([v != 0 for v in f64(x)])  # NaN != 0 is true
    b = np.array([int(v) != 0 for v in i])
    return Case(kir, "f", [Run([x, i], [a, b, a.astype(np.float32),
                                        b.astype(np.int32)])])


@case("cast_int_narrowing_wrap")
def _(rng):
    x = np.array([2**40 + 5, -(2**40) - 5, 2**31, -(2**31) - 1, 255, -129, 7],
                 np.int64)
    kir = ("func @f(%x: i64[7]) -> (i32[7], i8[7]) {\n"
           "  %a = cast %x {to = i32}\n  %b = cast %x {to = i8}\n"
           "  return %a, %b\n}\n")
    v = [int(e) for e in x]
    return Case(kir, "f", [Run([x], [np.array(wrap(v, 32), np.int32),
                                     np.array(wrap(v, 8), np.int8)])])


# --- Reductions --------------------------------------------------------------


def _reduction_case(op, attrs, in_type, out_type, ref, lo=-2.0, hi=2.0):
    def build(rng):
        kir = (f"func @f(%x: {in_type}) -> {out_type} {{\n"
               f"  %r = {op} %x {attrs}\n  return %r\n}}\n")
        x = uniform(rng, (2, 3, 4), lo, hi)
        return Case(kir, "f", [Run([x], [np.asarray(ref(f64(x)))
                                         .astype(np.float32)])])

    return build


case("reduce_sum_axis1")(_reduction_case(
    "reduce_sum", "{axes = [1]}", "f32[2, 3, 4]", "f32[2, 4]",
    lambda x: x.sum(axis=1)))
case("reduce_mean_keepdims")(_reduction_case(
    "reduce_mean", "{axes = [0, 2], keepdims = true}", "f32[2, 3, 4]",
    "f32[1, 3, 1]", lambda x: x.mean(axis=(0, 2), keepdims=True)))
case("reduce_max_negative_axis")(_reduction_case(
    "reduce_max", "{axes = [-1]}", "f32[2, 3, 4]", "f32[2, 3]",
    lambda x: x.max(axis=-1)))
case("reduce_min_all_empty_axes")(_reduction_case(
    "reduce_min", "{axes = []}", "f32[2, 3, 4]", "f32",
    lambda x: x.min()))
case("reduce_prod_keepdims_negative")(_reduction_case(
    "reduce_prod", "{axes = [-2], keepdims = true}", "f32[2, 3, 4]",
    "f32[2, 1, 4]", lambda x: x.prod(axis=-2, keepdims=True), 0.5, 2.0))
case("reduce_sum_all_keepdims")(_reduction_case(
    "reduce_sum", "{axes = [], keepdims = true}", "f32[2, 3, 4]",
    "f32[1, 1, 1]", lambda x: x.sum(keepdims=True)))


@case("reduce_symbolic_and_empty")
def _(rng):
    kir = ("func @f(%x: f32[N, 6]) -> (f32[6], f32[N], f32[6]) {\n"
           "  %s = reduce_sum %x {axes = [0]}\n"
           "  %m = reduce_max %x {axes = [1]}\n"
           "  %p = reduce_prod %x {axes = [0]}\n  return %s, %m, %p\n}\n")
    runs = []
    for n in (5, 1, 0):  # N = 0: sum gives 0, prod 1, max over 6 is fine
        x = uniform(rng, (n, 6), 0.5, 1.5)
        X = f64(x)
        runs.append(Run([x], [X.sum(axis=0).astype(np.float32),
                              X.max(axis=1, initial=-np.inf)
                              .astype(np.float32),
                              X.prod(axis=0).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("reduce_f64_and_nan")
def _(rng):
    x = uniform(rng, (3, 5), -4, 4, np.float64)
    x[1, 2] = np.nan
    kir = ("func @f(%x: f64[3, 5]) -> (f64[3], f64[5], f64) {\n"
           "  %s = reduce_sum %x {axes = [1]}\n"
           "  %m = reduce_max %x {axes = [0]}\n"
           "  %a = reduce_mean %x {axes = []}\n  return %s, %m, %a\n}\n")
    return Case(kir, "f", [Run([x], [x.sum(axis=1), x.max(axis=0),
                                     np.array(x.mean())])])


@case("reduce_int_sum_wrap")
def _(rng):
    x = np.array([[INT32_MAX, 1, 5], [-3, -4, INT32_MIN]], np.int32)
    kir = ("func @f(%x: i32[2, 3]) -> (i32[2], i32[3]) {\n"
           "  %s = reduce_sum %x {axes = [-1]}\n"
           "  %p = reduce_prod %x {axes = [0]}\n  return %s, %p\n}\n")
    X = [[int(v) for v in r] for r in x]
    s = wrap([sum(r) for r in X], 32)
    p = wrap([X[0][j] * X[1][j] for j in range(3)], 32)
    return Case(kir, "f", [Run([x], [np.array(s, np.int32),
                                     np.array(p, np.int32)])])


# --- argmax / argmin ---------------------------------------------------------


@case("argmax_argmin_ties")
def _(rng):
    kir = ("func @f(%x: f32[N, 6]) -> (i64[N], i64[1, 6], i64[N]) {\n"
           "  %a = argmax %x {axis = -1}\n"
           "  %b = argmax %x {axis = 0, keepdims = true}\n"
           "  %c = argmin %x {axis = 1}\n  return %a, %b, %c\n}\n")
    runs = []
    for n in (7, 1):
        x = small_ints(rng, (n, 6), 0, 3)  # many ties: first index wins
        runs.append(Run([x], [np.argmax(x, axis=-1).astype(np.int64),
                              np.argmax(x, axis=0)[None, :].astype(np.int64),
                              np.argmin(x, axis=1).astype(np.int64)]))
    return Case(kir, "f", runs)


@case("argmax_nan")
def _(rng):
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 9.0, 9.0, 1.0],
                  [np.nan, 0.0, 1.0, 2.0]], np.float32)
    kir = ("func @f(%x: f32[3, 4]) -> (i64[3], i64[3]) {\n"
           "  %a = argmax %x {axis = 1}\n  %b = argmin %x {axis = 1}\n"
           "  return %a, %b\n}\n")
    return Case(kir, "f", [Run([x], [np.argmax(x, axis=1).astype(np.int64),
                                     np.argmin(x, axis=1).astype(np.int64)])])


# --- softmax / log_softmax ---------------------------------------------------


def _softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _softmax_inputs(rng, n, cols=7):
    x = uniform(rng, (n, cols), -3, 3)
    if n >= 4:
        x[1] = uniform(rng, (cols,), -1e4, 1e4)  # magnitude 1e4
        x[2] = -1e4  # a row of equal -1e4 entries
        x[3] = 1e4 + small_ints(rng, (cols,), -2, 2)
    return x


@case("softmax_rows")
def _(rng):
    kir = ("func @f(%x: f32[N, 7]) -> f32[N, 7] {\n"
           "  %p = softmax %x {axis = -1}\n  return %p\n}\n")
    runs = [Run([x], [_softmax(f64(x), -1).astype(np.float32)])
            for x in (_softmax_inputs(rng, 6), _softmax_inputs(rng, 1))]
    return Case(kir, "f", runs)


def _attention_ref(q, kt, v, scale, keep):
    """Attention with the spec's roundings: each op's result rounded to
    f16 (the products accumulated in float64 here), softmax in float64."""
    h = np.float16
    s = (f64(q) @ f64(kt)).astype(h)
    s = (f64(s) * scale).astype(h)
    s = np.where(keep, f64(s), -np.inf)
    p = _softmax(s, -1).astype(h)
    return (f64(p) @ f64(v)).astype(h)


def _attention_case(mask_op, keep_fn):
    # 128 queries and keys, heads of 64: the shape the cuda target's
    # flash-attention kernel takes (kina-gpu-map-attention; it rounds P
    # before the division by the row sum instead of after: tolerance 4e-3).
    # "le" is the causal mask (key blocks above the diagonal skipped),
    # "ge" its mirror (rows that meet a whole block of -inf first).
    def build(rng):
        kir = ("func @f(%q: f16[2, 128, 64], %kt: f16[2, 64, 128], "
               "%v: f16[2, 128, 64]) -> f16[2, 128, 64] {\n"
               "  %s0 = matmul %q, %kt : f16[2, 128, 128]\n"
               "  %s1 = mul %s0, 0.125\n"
               "  %i = iota {axis = 0} : i32[128, 128]\n"
               "  %j = iota {axis = 1} : i32[128, 128]\n"
               f"  %keep = {mask_op} %j, %i\n"
               "  %s = select %keep, %s1, -inf : f16[2, 128, 128]\n"
               "  %p = softmax %s {axis = -1}\n"
               "  %o = matmul %p, %v : f16[2, 128, 64]\n"
               "  return %o\n}\n")
        q = uniform(rng, (2, 128, 64), -1, 1, np.float16)
        kt = uniform(rng, (2, 64, 128), -1, 1, np.float16)
        v = uniform(rng, (2, 128, 64), -2, 2, np.float16)
        keep = keep_fn(np.arange(128)[:, None], np.arange(128)[None, :])
        return Case(kir, "f", [Run([q, kt, v],
                                   [_attention_ref(q, kt, v, 0.125, keep)],
                                   tol={0: 4e-3})])
    return build


case("attention_causal_f16")(_attention_case("le", lambda i, j: j <= i))
case("attention_anticausal_f16")(_attention_case("ge", lambda i, j: j >= i))


@case("log_softmax_rows")
def _(rng):
    kir = ("func @f(%x: f32[N, 7]) -> f32[N, 7] {\n"
           "  %p = log_softmax %x {axis = 1}\n  return %p\n}\n")
    runs = [Run([x], [_log_softmax(f64(x), -1).astype(np.float32)])
            for x in (_softmax_inputs(rng, 6), _softmax_inputs(rng, 2))]
    return Case(kir, "f", runs)


@case("softmax_axis0_f64")
def _(rng):
    x = uniform(rng, (5, 3), -5, 5, np.float64)
    x[:, 1] = [1e4, -1e4, 3.0, 1e4, 0.5]
    kir = ("func @f(%x: f64[5, 3]) -> (f64[5, 3], f64[5, 3]) {\n"
           "  %p = softmax %x {axis = 0}\n  %l = log_softmax %x {axis = -2}\n"
           "  return %p, %l\n}\n")
    return Case(kir, "f", [Run([x], [_softmax(x, 0), _log_softmax(x, 0)])])


# --- matmul ------------------------------------------------------------------


@case("matmul_symbolic_2d")
def _(rng):
    kir = ("func @f(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {\n"
           "  %c = matmul %a, %b\n  return %c\n}\n")
    runs = []
    for m, k, n in [(3, 4, 5), (1, 7, 2), (4, 0, 3), (6, 33, 1)]:
        a = uniform(rng, (m, k), -1, 1)
        b = uniform(rng, (k, n), -1, 1)
        runs.append(Run([a, b], [(f64(a) @ f64(b)).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("matmul_dynamic_2d")
def _(rng):
    kir = ("func @f(%a: f32[?, ?], %b: f32[?, ?]) -> f32[?, ?] {\n"
           "  %c = matmul %a, %b\n  return %c\n}\n")
    runs = []
    for m, k, n in [(5, 3, 4), (2, 16, 9)]:
        a = uniform(rng, (m, k), -1, 1)
        b = uniform(rng, (k, n), -1, 1)
        runs.append(Run([a, b], [(f64(a) @ f64(b)).astype(np.float32)]))
    # Contraction dims 3 vs 4: a run-time Validation Error.
    runs.append(Run([uniform(rng, (2, 3), -1, 1), uniform(rng, (4, 2), -1, 1)],
                    status=1, message=BOTH_3_AND_4))
    return Case(kir, "f", runs)


@case("matmul_batched_broadcast")
def _(rng):
    kir = ("func @f(%a: f32[2, 1, 3, 4], %b: f32[5, 4, 6]) -> "
           "f32[2, 5, 3, 6] {\n  %c = matmul %a, %b\n  return %c\n}\n")
    a = uniform(rng, (2, 1, 3, 4), -1, 1)
    b = uniform(rng, (5, 4, 6), -1, 1)
    return Case(kir, "f", [Run([a, b], [np.matmul(f64(a), f64(b))
                                        .astype(np.float32)])])


@case("matmul_batched_symbolic")
def _(rng):
    kir = ("func @f(%a: f32[B, M, 8], %b: f32[8, N]) -> f32[B, M, N] {\n"
           "  %c = matmul %a, %b\n  return %c\n}\n")
    runs = []
    for bsz, m, n in [(3, 2, 5), (1, 4, 1)]:
        a = uniform(rng, (bsz, m, 8), -1, 1)
        b = uniform(rng, (8, n), -1, 1)
        runs.append(Run([a, b], [np.matmul(f64(a), f64(b))
                                 .astype(np.float32)]))
    return Case(kir, "f", runs)


@case("matmul_rank1")
def _(rng):
    kir = ("func @f(%v: f32[K], %m: f32[K, 3], %n: f32[5, K], %w: f32[K]) "
           "-> (f32[3], f32[5], f32) {\n"
           "  %a = matmul %v, %m\n  %b = matmul %n, %v\n"
           "  %c = matmul %v, %w\n  return %a, %b, %c\n}\n")
    v, w = uniform(rng, (4,), -1, 1), uniform(rng, (4,), -1, 1)
    m, n = uniform(rng, (4, 3), -1, 1), uniform(rng, (5, 4), -1, 1)
    V, W, M, N = f64(v), f64(w), f64(m), f64(n)
    refs = [np.matmul(V, M), np.matmul(N, V), np.array(np.matmul(V, W))]
    return Case(kir, "f", [Run([v, m, n, w],
                               [r.astype(np.float32) for r in refs])])


@case("matmul_f64_and_i32")
def _(rng):
    kir = ("func @f(%a: f64[N, 8], %b: f64[8, 3], %i: i32[2, 3], "
           "%j: i32[3, 2]) -> (f64[N, 3], i32[2, 2]) {\n"
           "  %c = matmul %a, %b\n  %k = matmul %i, %j\n  return %c, %k\n}\n")
    a = uniform(rng, (5, 8), -1, 1, np.float64)
    b = uniform(rng, (8, 3), -1, 1, np.float64)
    i = rng.integers(-100, 100, size=(2, 3)).astype(np.int32)
    j = rng.integers(-100, 100, size=(3, 2)).astype(np.int32)
    return Case(kir, "f", [Run([a, b, i, j], [a @ b, (i.astype(np.int64) @ j)
                                              .astype(np.int32)])])


# --- Larger sizes (vector tails, tiling) -------------------------------------


@case("large_matmul_dynamic")
def _(rng):
    kir = ("func @f(%a: f32[?, ?], %b: f32[?, ?]) -> f32[?, ?] {\n"
           "  %c = matmul %a, %b\n  return %c\n}\n")
    runs = []
    for m, k, n in [(65, 130, 33), (128, 64, 128)]:
        a = uniform(rng, (m, k), -1, 1)
        b = uniform(rng, (k, n), -1, 1)
        runs.append(Run([a, b], [(f64(a) @ f64(b)).astype(np.float32)]))
    return Case(kir, "f", runs)


# The element-by-element consumers the cuda target computes in cuBLASLt's
# epilogue (docs/cuda.md, "Matmul epilogues"); on the cpu target ordinary
# fused loops. Each checks the fused form against float64 NumPy.
@case("matmul_epilogue_bias_relu")
def _(rng):
    kir = ("func @f(%x: f32[N, 64], %w: f32[64, 32], %b: f32[32]) -> "
           "f32[N, 32] {\n  %h = matmul %x, %w\n  %h1 = add %h, %b\n"
           "  %a = relu %h1\n  return %a\n}\n")
    w, b = uniform(rng, (64, 32), -0.5, 0.5), uniform(rng, (32,), -1, 1)
    runs = []
    for n in (37, 1):
        x = uniform(rng, (n, 64), -1, 1)
        runs.append(Run([x, w, b], [np.maximum(f64(x) @ f64(w) + f64(b), 0)
                                    .astype(np.float32)]))
    # NaN propagates through relu (maximumf), as np.maximum: a NaN in row 1
    # makes that row NaN; an infinity in row 2 gives inf or NaN per column.
    x = uniform(rng, (5, 64), -1, 1)
    x[1, 3] = np.nan
    x[2, 0] = np.inf
    with np.errstate(invalid="ignore"):
        ref = np.maximum(f64(x) @ f64(w) + f64(b), 0).astype(np.float32)
    runs.append(Run([x, w, b], [ref]))
    return Case(kir, "f", runs)


@case("matmul_epilogue_bias_gelu_tanh")
def _(rng):
    kir = ("func @f(%x: f32[B, 16, 24], %w: f32[24, 40], %b: f32[40]) -> "
           "f32[B, 16, 40] {\n  %f0 = matmul %x, %w\n  %f1 = add %f0, %b\n"
           "  %f = gelu %f1 {approximate = \"tanh\"}\n  return %f\n}\n")
    w, b = uniform(rng, (24, 40), -1, 1), uniform(rng, (40,), -2, 2)
    runs = []
    for batch in (3, 1):
        x = uniform(rng, (batch, 16, 24), -1, 1)
        ref = _gelu_tanh(np.matmul(f64(x), f64(w)) + f64(b))
        runs.append(Run([x, w, b], [ref.astype(np.float32)]))
    return Case(kir, "f", runs)


@case("matmul_epilogue_scale_and_residual")
def _(rng):
    # A scale alone (alpha 0.3), and a residual after a power-of-two scale
    # (alpha 0.125, beta 1) over a strided batch.
    kir = ("func @f(%a: f32[2, 5, 7], %b: f32[2, 7, 6], %c: f32[2, 7, 4], "
           "%r: f32[2, 5, 4]) -> (f32[2, 5, 6], f32[2, 5, 4]) {\n"
           "  %p = matmul %a, %b\n  %s = mul %p, 0.3\n"
           "  %t0 = matmul %a, %c\n  %t1 = mul %t0, 0.125\n"
           "  %t = add %r, %t1\n  return %s, %t\n}\n")
    a, b = uniform(rng, (2, 5, 7), -1, 1), uniform(rng, (2, 7, 6), -1, 1)
    c, r = uniform(rng, (2, 7, 4), -1, 1), uniform(rng, (2, 5, 4), -3, 3)
    s = np.matmul(f64(a), f64(b)) * f64(np.float32(0.3))
    t = f64(r) + np.matmul(f64(a), f64(c)) * 0.125
    return Case(kir, "f", [Run([a, b, c, r], [s.astype(np.float32),
                                              t.astype(np.float32)])])


@case("matmul_kernel_edges")
def _(rng):
    # The register-tiled kernel (src/passes/MatmulKernel.cpp): rows not a
    # multiple of 4, columns around its 2 x 8 (f32) and 2 x 4 (f64) vector
    # widths and the masked last columns, K across its 256-deep blocks, M
    # across its 64-row blocks, and empty operands.
    kir = ("func @f(%a: f32[?, ?], %b: f32[?, ?], %c: f64[?, ?], "
           "%d: f64[?, ?]) -> (f32[?, ?], f64[?, ?]) {\n"
           "  %x = matmul %a, %b\n  %y = matmul %c, %d\n"
           "  return %x, %y\n}\n")
    runs = []
    for m, k, n in [(1, 1, 1), (3, 5, 7), (4, 8, 8), (5, 9, 9), (7, 3, 15),
                    (9, 17, 16), (6, 2, 17), (13, 31, 23), (70, 300, 33),
                    (2, 513, 77), (67, 40, 4), (5, 0, 9), (0, 4, 3),
                    (4, 6, 0)]:
        a = uniform(rng, (m, k), -1, 1)
        b = uniform(rng, (k, n), -1, 1)
        c = uniform(rng, (m, k), -1, 1, np.float64)
        d = uniform(rng, (k, n), -1, 1, np.float64)
        runs.append(Run([a, b, c, d], [(f64(a) @ f64(b)).astype(np.float32),
                                       c @ d], tol={0: 1e-4}))
    return Case(kir, "f", runs)


@case("param_names_reserved_in_c")
def _(rng):
    # Kina names that are C keywords, macros, the header's own names, or
    # that map to the same C name: the header renames them (arg<i>).
    kir = ("func @f(%int: f32[3], %result: f32[3], %out0: f32[3], "
           "%x.1: f32[3], %x_1: f32[3], %NULL: f32[3], %class: f32[3], "
           "%0: f32[3], %arg_0: f32[3]) -> f32[3] {\n"
           "  %a = add %int, %result\n  %b = add %a, %out0\n"
           "  %c = add %b, %x.1\n  %d = add %c, %x_1\n"
           "  %e = add %d, %NULL\n  %g = add %e, %class\n"
           "  %h = add %g, %0\n  %i = sub %h, %arg_0\n  return %i\n}\n")
    xs = [small_ints(rng, (3,), -4, 4) for _ in range(9)]
    want = sum(f64(x) for x in xs[:8]) - f64(xs[8])
    return Case(kir, "f", [Run(xs, [want.astype(np.float32)])])


@case("concat_many_operands")
def _(rng):
    # 37 operands of different run-time lengths along axis 1 (the element's
    # operand is found by a binary search over the offsets), some empty.
    n = 37
    params = ", ".join(f"%x{i}: f32[2, ?]" for i in range(n))
    kir = (f"func @f({params}) -> f32[2, ?] {{\n  %y = concat " +
           ", ".join(f"%x{i}" for i in range(n)) +
           " {axis = 1}\n  return %y\n}\n")
    runs = []
    for _ in range(2):
        xs = [uniform(rng, (2, int(rng.integers(0, 4))), -1, 1)
              for _ in range(n)]
        runs.append(Run(xs, [np.concatenate(xs, axis=1)]))
    return Case(kir, "f", runs)


@case("slice_int64_bounds")
def _(rng):
    # "To the end" and "from the end" as docs/language.md writes them, with
    # INT64_MAX / INT64_MIN bounds (and INT64_MAX - 1), on a dynamic dim.
    big, small = 2**63 - 1, -2**63
    kir = ("func @f(%x: i32[?]) -> (i32[?], i32[?], i32[?]) {\n"
           f"  %a = slice %x {{start = [2], stop = [{big}], step = [1]}}\n"
           f"  %b = slice %x {{start = [{big - 1}], stop = [{small}], "
           "step = [-1]}\n"
           f"  %c = slice %x {{start = [0], stop = [{big}], step = [3]}}\n"
           "  return %a, %b, %c\n}\n")
    runs = []
    for n in (0, 1, 2, 3, 7, 10):
        x = np.arange(n, dtype=np.int32) * 3 - 4
        runs.append(Run([x], [x[2:], x[::-1], x[0::3]]))
    return Case(kir, "f", runs)


@case("reshape_symbolic_dims")
def _(rng):
    # Several symbolic dims in one reshape group (MLIR 22's
    # expand-strided-metadata crashed on these; src/passes/workarounds/ExpandShape.cpp).
    kir = ("func @f(%x: f32[B, T, 8], %y: f32[N, M]) -> "
           "(f32[B, T, 2, 4], f32[B, T, 8], f32[N, M], f32[?, 4]) {\n"
           "  %s = reshape %x {shape = [B, T, 2, 4]}\n"
           "  %t = reshape %s {shape = [B, T, 8]}\n"
           "  %u = reshape %y {shape = [N, M]}\n"
           "  %v = reshape %x {shape = [-1, 4]}\n"
           "  return %s, %t, %u, %v\n}\n")
    runs = []
    for bsz, t, n, m in [(2, 3, 4, 5), (1, 1, 1, 1), (3, 0, 2, 0), (5, 7, 1, 9)]:
        x = uniform(rng, (bsz, t, 8), -1, 1)
        y = uniform(rng, (n, m), -1, 1)
        runs.append(Run([x, y], [x.reshape(bsz, t, 2, 4), x, y,
                                 x.reshape(-1, 4)]))
    return Case(kir, "f", runs)


CAST_TYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i8", "i1"]
# What an object may leave undefined: the runtime's symbols, and the f16
# conversions of libgcc 12 (Debian 12's libgcc has no bf16 ones, such as
# __truncsfbf2: no bf16 conversion may reach LLVM as a libcall).
RUNTIME_AND_LIBGCC = (r"kina_rt_\w+|_mlir_ciface_runtime_\w+|runtime_\w+|"
                      r"__extendhf[sd]f2|__trunc[sd]fhf2")


@case("cast_no_libcalls")
def _(rng):
    # Every chain of two casts between all element types, as one module per
    # optimisation level (folding across the pair used to leave an
    # integer -> bf16 sitofp, or f16 -> bf16 at -O0, which LLVM lowers with
    # __truncsfbf2): every object must link and need no other symbols.
    chains = []
    for a in CAST_TYPES:
        for m in CAST_TYPES:
            for b in CAST_TYPES:
                chains.append(f"func @c_{a}_{m}_{b}(%x: {a}[?]) -> {b}[?] {{\n"
                              f"  %m = cast %x {{to = {m}}}\n"
                              f"  %r = cast %m {{to = {b}}}\n"
                              "  return %r\n}\n")
    module = "\n".join(chains)
    kir = ("func @f(%x: i64[?]) -> f32[?] {\n"
           "  %a = cast %x {to = f32}\n  %b = cast %a {to = bf16}\n"
           "  %c = cast %b {to = f32}\n  return %c\n}\n")
    x = np.array([3, -7], dtype=np.int64)
    return Case(kir, "f", [Run([x], [np.array([3, -7], np.float32)])],
                others=[(module, [f"-O{o}", f"--symbol-prefix=o{o}_"])
                        for o in (0, 2)],
                undefined_ok=RUNTIME_AND_LIBGCC)


def _round_to_bits(v, bits):
    """v (a Python int or float) rounded to `bits` significant bits, to
    nearest, ties to even (exact, with Python integers and fractions)."""
    from fractions import Fraction
    v = Fraction(v)
    if v == 0:
        return v
    sign = -1 if v < 0 else 1
    v = abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    ulp = Fraction(2) ** (e - bits + 1)
    q, r = divmod(v, ulp)
    if r * 2 > ulp or (r * 2 == ulp and q % 2 == 1):
        q += 1
    return sign * q * ulp


@case("cast_chain_rounds_twice")
def _(rng):
    # Each cast rounds (spec, cast row): i -> f32 -> bf16 rounds at 24 bits,
    # then at 8, and i64 -> f64 -> f32 at 53, then 24. MLIR's canonicalizer
    # folded each pair into one conversion that rounds once (different for
    # 2^30 + 2^22 + 1 and 2^60 + 2^36 + 1), at -O1 and above.
    kir = ("func @f(%x: i64[?], %y: i32[?], %z: i8[?], %w: i1[?]) -> "
           "(f32[?], f32[?], f32[?], f32[?], f32[?]) {\n"
           "  %a = cast %x {to = f32}\n  %b = cast %a {to = bf16}\n"
           "  %r0 = cast %b {to = f32}\n"
           "  %c = cast %y {to = f32}\n  %d = cast %c {to = bf16}\n"
           "  %r1 = cast %d {to = f32}\n"
           "  %e = cast %x {to = f64}\n  %r2 = cast %e {to = f32}\n"
           "  %g = cast %z {to = f32}\n  %h = cast %g {to = bf16}\n"
           "  %r3 = cast %h {to = f32}\n"
           "  %i = cast %w {to = f32}\n  %j = cast %i {to = bf16}\n"
           "  %r4 = cast %j {to = f32}\n"
           "  return %r0, %r1, %r2, %r3, %r4\n}\n")
    xs = [3, -7, 2**30 + 2**22 + 1, -(2**30 + 2**22 + 1), 2**60 + 2**36 + 1,
          -(2**62 + 2**38 + 1), 2**63 - 1, -2**63, 0, 255]
    ys = [3, -7, 2**30 + 2**22 + 1, -(2**30 + 2**22 + 1), 2**31 - 1, -2**31,
          16777217, 0, 1, -1]
    zs = [3, -7, 127, -128, 0, 1]
    ws = [True, False, True]

    def twice(v, first, second):
        return float(_round_to_bits(_round_to_bits(v, first), second))
    x = np.array(xs, np.int64)
    y = np.array(ys, np.int32)
    z = np.array(zs, np.int8)
    w = np.array(ws, np.bool_)
    out = [np.array([twice(v, 24, 8) for v in xs], np.float32),
           np.array([twice(v, 24, 8) for v in ys], np.float32),
           np.array([twice(v, 53, 24) for v in xs], np.float32),
           np.array([twice(v, 24, 8) for v in zs], np.float32),
           np.array([float(v) for v in ws], np.float32)]
    return Case(kir, "f", [Run([x, y, z, w], out, tol={k: 0.0 for k in
                                                       range(5)})])


@case("large_elementwise_broadcast")
def _(rng):
    kir = ("func @f(%x: f32[N, 37], %b: f32[37], %s: f32[N, 1]) -> "
           "f32[N, 37] {\n"
           "  %y = add %x, %b\n  %z = mul %y, %s\n  %t = tanh %z\n"
           "  return %t\n}\n")
    runs = []
    for n in (1000, 3):
        x = uniform(rng, (n, 37), -2, 2)
        b = uniform(rng, (37,), -1, 1)
        sc = uniform(rng, (n, 1), -2, 2)
        ref = np.tanh((f64(x) + f64(b)) * f64(sc)).astype(np.float32)
        runs.append(Run([x, b, sc], [ref]))
    return Case(kir, "f", runs)


@case("large_softmax_and_reduce")
def _(rng):
    kir = ("func @f(%x: f32[N, 129]) -> (f32[N, 129], f32[N], i64[N]) {\n"
           "  %p = softmax %x {axis = -1}\n"
           "  %s = reduce_sum %x {axes = [1]}\n"
           "  %a = argmax %x {axis = 1}\n  return %p, %s, %a\n}\n")
    runs = []
    for n in (300, 17):
        x = uniform(rng, (n, 129), -8, 8)
        X = f64(x)
        runs.append(Run([x], [_softmax(X, -1).astype(np.float32),
                              X.sum(axis=1).astype(np.float32),
                              np.argmax(x, axis=1).astype(np.int64)],
                        tol={1: 1e-4}))  # f32 sums of 129 terms
    return Case(kir, "f", runs)


# --- Functions: several results, private calls -------------------------------


@case("two_results")
def _(rng):
    kir = ("module @two\n\n"
           "func @stats(%x: f32[N, 4]) -> (f32[N], f32[N, 4]) {\n"
           "  %s = reduce_sum %x {axes = [1]}\n  %e = exp %x\n"
           "  return %s, %e\n}\n")
    runs = []
    for n in (3, 1):
        x = uniform(rng, (n, 4), -2, 2)
        runs.append(Run([x], [f64(x).sum(axis=1).astype(np.float32),
                              np.exp(f64(x)).astype(np.float32)]))
    return Case(kir, "stats", runs, exported=["kina_stats"])


@case("private_call")
def _(rng):
    kir = ("module @calls\n\n"
           "private func @affine(%x: f32[N, 3], %w: f32[3, 2], %b: f32[2]) "
           "-> f32[N, 2] {\n"
           "  %y = matmul %x, %w\n  %z = add %y, %b\n  return %z\n}\n\n"
           "func @model(%x: f32[B, 3], %w: f32[3, 2], %b: f32[2]) -> "
           "f32[B, 2] {\n"
           "  %y = call @affine(%x, %w, %b)\n  %t = tanh %y\n  return %t\n}\n")
    w, b = uniform(rng, (3, 2), -1, 1), uniform(rng, (2,), -1, 1)
    runs = []
    for n in (4, 1):
        x = uniform(rng, (n, 3), -2, 2)
        ref = np.tanh(f64(x) @ f64(w) + f64(b)).astype(np.float32)
        runs.append(Run([x, w, b], [ref]))
    return Case(kir, "model", runs, exported=["kina_model"],
                hidden=["kina_affine", "_mlir_ciface_affine", "affine"])


@case("symbol_named_main")
def _(rng):
    # The C harness defines main(); the module's @main must not clash with it
    # (kinac may also refuse the name with a diagnostic).
    kir = "func @main(%x: f32[4]) -> f32[4] {\n" \
          "  %y = exp %x\n  return %y\n}\n"
    x = uniform(rng, (4,), -2, 2)
    return Case(kir, "main", [Run([x], [np.exp(f64(x)).astype(np.float32)])],
                exported=["kina_main"], hidden=["main"],
                reject_ok=r"error.*\bmain\b")


@case("symbol_named_like_libm")
def _(rng):
    # @sin computes libm's sin on f64: the compiled call must reach libm, not
    # the module's own function (or kinac refuses the name).
    kir = "func @sin(%x: f64[5]) -> f64[5] {\n" \
          "  %y = sin %x\n  %z = mul %y, 2.0\n  return %z\n}\n"
    x = uniform(rng, (5,), -3, 3, np.float64)
    return Case(kir, "sin", [Run([x], [2.0 * np.sin(x)])],
                reject_ok=r"error.*\bsin\b")


@case("symbol_prefix_two_modules")
def _(rng):
    # Two modules with the same function name, prefixed apart, linked into
    # one program that includes both generated headers.
    kir = "module @m1\n\nfunc @f(%x: f32[N]) -> f32[N] {\n" \
          "  %y = exp %x\n  return %y\n}\n"
    other = "module @m2\n\nfunc @f(%x: f32[N]) -> f32[N] {\n" \
            "  %y = tanh %x\n  return %y\n}\n"
    x = uniform(rng, (6,), -2, 2)
    return Case(kir, "f", [Run([x], [np.exp(f64(x)).astype(np.float32)])],
                prefix="a_", others=[(other, ["--symbol-prefix=b_"])],
                exported=["kina_a_f"], hidden=["kina_f"])


# --- Run-time shape checks ---------------------------------------------------

BOTH_3_AND_4 = r"(?=.*\b3\b)(?=.*\b4\b)"  # the message names both sizes


@case("mismatch_symbolic_dim")
def _(rng):
    kir = ("func @f(%a: f32[N, 2], %b: f32[N, 2]) -> f32[N, 2] {\n"
           "  %s = add %a, %b\n  return %s\n}\n")
    a3, b3 = uniform(rng, (3, 2), -1, 1), uniform(rng, (3, 2), -1, 1)
    return Case(kir, "f", [
        Run([a3, b3], [(f64(a3) + f64(b3)).astype(np.float32)]),
        Run([a3, uniform(rng, (4, 2), -1, 1)], status=1, message=r"\bN\b"),
        Run([uniform(rng, (5, 2), -1, 1), b3], status=1, message=r"\bN\b"),
    ])


@case("mismatch_static_dim")
def _(rng):
    kir = ("func @f(%a: f32[N, 4]) -> f32[N, 4] {\n"
           "  %e = relu %a\n  return %e\n}\n")
    return Case(kir, "f", [Run([uniform(rng, (3, 5), -1, 1)], status=1,
                               message=r"(?=.*\b4\b)(?=.*\b5\b)")],
                results=[("f32", 2)])


@case("mismatch_dynamic_broadcast")
def _(rng):
    kir = ("func @f(%a: f32[?], %b: f32[?]) -> f32[?] {\n"
           "  %s = add %a, %b\n  return %s\n}\n")
    a = uniform(rng, (3,), -1, 1)
    runs = [Run([a, uniform(rng, (4,), -1, 1)], status=1,
                message=BOTH_3_AND_4)]
    for n in (1, 3):  # these must still work
        b = uniform(rng, (n,), -1, 1)
        runs.append(Run([a, b], [(f64(a) + f64(b)).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("mismatch_annotation_refinement")
def _(rng):
    # `: f32[?, 3]` -> `: f32[M, 3]`: the annotation refines `?` to the symbol
    # M bound by %m; the run-time size must agree.
    kir = ("func @f(%a: f32[?, 3], %m: f32[M]) -> f32[M, 3] {\n"
           "  %e = exp %a : f32[M, 3]\n  return %e\n}\n")
    a = uniform(rng, (4, 3), -1, 1)
    return Case(kir, "f", [
        Run([a, uniform(rng, (4,), -1, 1)], [np.exp(f64(a)).astype(np.float32)]),
        Run([a, uniform(rng, (5,), -1, 1)], status=1,
            message=r"(?=.*annotation)(?=.*\b4\b)(?=.*\b5\b)"),
    ])


@case("constant_symbolic_splat")
def _(rng):
    # A splat constant over a parameter's symbolic dim takes its run-time size.
    kir = ("func @f(%x: f32[N, 3]) -> f32[N, 3] {\n"
           "  %c = constant 0.5 : f32[N, 3]\n  %y = add %x, %c\n"
           "  return %y\n}\n")
    runs = []
    for n in (0, 1, 4):
        x = uniform(rng, (n, 3), -1, 1)
        runs.append(Run([x], [(f64(x) + 0.5).astype(np.float32)]))
    return Case(kir, "f", runs)


@case("return_argument_and_twice")
def _(rng):
    # Results must be fresh buffers the caller owns, even when the function
    # returns its own argument or the same value twice.
    kir = ("func @f(%a: f32[N, 2]) -> (f32[N, 2], f32[N, 2], f32[N, 2]) {\n"
           "  %e = neg %a\n  return %a, %e, %e\n}\n")
    a = uniform(rng, (3, 2), -1, 1)
    return Case(kir, "f", [Run([a], [a, -a, -a])])


# --- The C harness -----------------------------------------------------------

C_SIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
          "i8": 1, "i1": 1}

C_PRELUDE = r"""/* Generated by tests/e2e/run_e2e.py: calls a kinac entry point
 * on the inputs in the run directory argv[1] and writes its results there. */
#include "case.h"
@OTHER_HEADERS@
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAD 64 /* bytes between `allocated` and `aligned` */

/* From kina/runtime.h (libkina_runtime.a): buffers recorded and not freed. */
int64_t runtime_live_buffer_count(void);

static char path_buf[4096];

static const char *path(const char *dir, const char *name, int index,
                        const char *ext) {
  snprintf(path_buf, sizeof path_buf, "%s/%s%d.%s", dir, name, index, ext);
  return path_buf;
}

/* Reads in<i>.shape (rank sizes) and in<i>.bin into a fresh buffer whose
 * data starts PAD bytes after the allocation; row-major strides. */
static int setup_input(const char *dir, int index, int rank, size_t elem,
                       void **allocated, void **aligned, int64_t *offset,
                       int64_t *sizes, int64_t *strides) {
  FILE *f = fopen(path(dir, "in", index, "shape"), "r");
  long long v;
  int64_t count = 1, stride = 1;
  int d;
  unsigned char *base;
  if (!f) {
    fprintf(stderr, "harness: cannot open %s\n", path_buf);
    return 1;
  }
  for (d = 0; d < rank; ++d) {
    if (fscanf(f, "%lld", &v) != 1) {
      fprintf(stderr, "harness: bad shape file for input %d\n", index);
      fclose(f);
      return 1;
    }
    sizes[d] = v;
    count *= v;
  }
  fclose(f);
  for (d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  base = malloc(PAD + (size_t)count * elem + 1);
  if (!base)
    return 1;
  f = fopen(path(dir, "in", index, "bin"), "rb");
  if (!f || fread(base + PAD, 1, (size_t)count * elem, f) !=
                (size_t)count * elem) {
    fprintf(stderr, "harness: cannot read input %d\n", index);
    if (f)
      fclose(f);
    free(base);
    return 1;
  }
  fclose(f);
  *allocated = base;
  *aligned = base + PAD;
  *offset = 0;
  return 0;
}

/* Writes out<i>.shape and the elements of a result, walking its strides. */
static int write_output(const char *dir, int index, int rank, size_t elem,
                        void *allocated, void *aligned, int64_t offset,
                        const int64_t *sizes, const int64_t *strides) {
  FILE *f;
  int64_t idx[8] = {0}, count = 1;
  int d;
  if (!allocated || !aligned) {
    fprintf(stderr, "harness: result %d has a null pointer\n", index);
    return 1;
  }
  f = fopen(path(dir, "out", index, "shape"), "w");
  if (!f)
    return 1;
  fprintf(f, "%d", rank);
  for (d = 0; d < rank; ++d) {
    fprintf(f, " %lld", (long long)sizes[d]);
    count *= sizes[d];
  }
  fprintf(f, "\n");
  fclose(f);
  f = fopen(path(dir, "out", index, "bin"), "wb");
  if (!f)
    return 1;
  while (count-- > 0) {
    int64_t pos = offset;
    for (d = 0; d < rank; ++d)
      pos += idx[d] * strides[d];
    fwrite((const unsigned char *)aligned + pos * (int64_t)elem, 1, elem, f);
    for (d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
  }
  fclose(f);
  return 0;
}

static int free_output(int index, void *allocated) {
  int32_t status = runtime_free(allocated);
  if (status != KINA_STATUS_SUCCESS) {
    fprintf(stderr, "harness: runtime_free(result %d) gave %d (%s): %s\n",
            index, (int)status, kina_status_name(status), kina_last_error());
    return 1;
  }
  return 0;
}

static void write_live(const char *dir, int64_t before, int64_t after) {
  FILE *f = fopen(path(dir, "live", 0, "txt"), "w");
  if (f) {
    fprintf(f, "%lld %lld\n", (long long)before, (long long)after);
    fclose(f);
  }
}

static void write_status(const char *dir, int32_t status) {
  FILE *f = fopen(path(dir, "status", 0, "txt"), "w");
  if (f) {
    fprintf(f, "%d\n", (int)status);
    fclose(f);
  }
  f = fopen(path(dir, "message", 0, "txt"), "w");
  if (f) {
    fputs(kina_last_error(), f);
    fclose(f);
  }
}
"""


def generate_harness(c):
    """C99 source calling kina_<fn> with c.args and c.results."""
    others = "".join(f'#include "case{k + 1}.h"\n'
                     for k in range(len(c.others)))
    lines = [C_PRELUDE.replace("@OTHER_HEADERS@", others),
             "int main(int argc, char **argv) {",
             "  const char *dir;", "  int32_t status;", "  int rc = 0;",
             "  int64_t live_before;"]
    for i, (_, r) in enumerate(c.args):
        lines.append(f"  KinaMemRef{r} in{i};")
    for j, (_, r) in enumerate(c.results):
        lines.append(f"  KinaMemRef{r} out{j};")
    lines += ["  if (argc != 2)", "    return 20;", "  dir = argv[1];"]
    for i, (t, r) in enumerate(c.args):
        arrays = f"in{i}.sizes, in{i}.strides" if r else "NULL, NULL"
        lines += [f"  memset(&in{i}, 0, sizeof in{i});",
                  f"  if (setup_input(dir, {i}, {r}, {C_SIZE[t]}, "
                  f"&in{i}.allocated, &in{i}.aligned, &in{i}.offset, "
                  f"{arrays}))", "    return 21;"]
    for j in range(len(c.results)):
        lines.append(f"  memset(&out{j}, 0, sizeof out{j});")
    lines.append("  live_before = runtime_live_buffer_count();")
    call_args = [f"&out{j}" for j in range(len(c.results))]
    call_args += [f"&in{i}" for i in range(len(c.args))]
    lines += [f"  status = kina_{c.prefix}{c.fn}({', '.join(call_args)});",
              "  write_status(dir, status);",
              "  if (status != KINA_STATUS_SUCCESS) {",
              '    printf("status %d (%s): %s\\n", (int)status, '
              "kina_status_name(status), kina_last_error());",
              "    rc = status;", "  } else {"]
    for j, (t, r) in enumerate(c.results):
        arrays = f"out{j}.sizes, out{j}.strides" if r else "NULL, NULL"
        lines += [f"    if (write_output(dir, {j}, {r}, {C_SIZE[t]}, "
                  f"out{j}.allocated, out{j}.aligned, out{j}.offset, "
                  f"{arrays}))", "      rc = 22;"]
    for j in range(len(c.results)):
        lines += [f"    if (free_output({j}, out{j}.allocated))",
                  "      rc = 23;"]
    lines += ["  }",
              "  write_live(dir, live_before, runtime_live_buffer_count());"]
    for i in range(len(c.args)):
        lines.append(f"  free(in{i}.allocated);")
    lines += ["  return rc;", "}", ""]
    return "\n".join(lines)


# --- Running and comparing ---------------------------------------------------


class Failure(Exception):
    pass


class Rejected(Exception):
    """kinac refused a module that the case allows it to refuse."""


# A case's compile may take minutes: cast_no_libcalls' 512-function module
# at -O2 (three processor versions) took 129 s of CPU and 264 s of wall
# time on a 2-core machine with ctest -j2 and other builds beside it
# (2026-12-07), past the 300 s this limit was; a hang still ends here.
KINAC_TIMEOUT_S = 900


def run_tool(cmd, cwd, what, timeout):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{what} timed out after {timeout}s: {shlex.join(cmd)}")
    if p.returncode != 0:
        out = (p.stdout + p.stderr).strip()
        raise Failure(f"{what} failed (exit {p.returncode}): "
                      f"{shlex.join(cmd)}\n{out}")
    return p


def compare(got, ref, tol):
    """Returns None when `got` matches `ref`, else a description."""
    if got.shape != ref.shape:
        return f"shape {list(got.shape)}, expected {list(ref.shape)}"
    if ref.dtype.kind == "f":
        g, r = got.astype(np.float64), ref.astype(np.float64)
        nan_g, nan_r = np.isnan(g), np.isnan(r)
        bad = nan_g != nan_r
        fin = ~nan_r & ~nan_g
        inf = fin & (np.isinf(r) | np.isinf(g))
        bad |= inf & (g != r)
        fin &= ~inf
        with np.errstate(invalid="ignore"):
            err = np.where(fin, np.abs(g - r) / np.maximum(1.0, np.abs(r)), 0)
        bad |= err > tol
    else:
        bad = got != ref
    if not bad.any():
        return None
    idx = np.argwhere(bad) if bad.ndim else [()]
    first = tuple(int(i) for i in idx[0])
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at "
            f"{list(first)}: got {got[first]!r}, expected {ref[first]!r}")


def read_output(run_dir, j, dtype, rank):
    with open(os.path.join(run_dir, f"out{j}.shape")) as f:
        fields = [int(v) for v in f.read().split()]
    if fields[0] != rank:
        raise Failure(f"result {j} has rank {fields[0]}, expected {rank}")
    raw = np.fromfile(os.path.join(run_dir, f"out{j}.bin"), dtype=np.uint8)
    if dtype == "i1":
        if (raw > 1).any():
            raise Failure(f"result {j} (i1) holds bytes other than 0 and 1")
        return raw.astype(np.bool_).reshape(fields[1:])
    return raw.view(np.dtype(NP_OF[dtype]).newbyteorder("<")) \
        .reshape(fields[1:])


def symbols_undefined(obj):
    p = subprocess.run(["nm", "-u", obj], capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f"nm failed on {obj}: {p.stderr.strip()}")
    return {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}


def symbols_defined(obj):
    p = subprocess.run(["nm", "-g", "--defined-only", obj],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f"nm failed on {obj}: {p.stderr.strip()}")
    return {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}


# A message with control bytes or C++ library text read past its end.
CORRUPT_MESSAGE = re.compile(r"[^\x20-\x7e]|basic_string|std::")


def run_case(name, builder, opts):
    """Builds, compiles and runs one case; returns a list of problems."""
    seed = zlib.crc32(name.encode())
    c = builder(np.random.default_rng(seed))
    work = os.path.join(opts.workdir, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    objects = []
    modules = [(c.kir, [f"--symbol-prefix={c.prefix}"] if c.prefix else [])]
    for k, (kir, flags) in enumerate(modules + c.others):
        stem = f"case{k or ''}"
        with open(os.path.join(work, stem + ".kir"), "w") as f:
            f.write(f"# e2e case {name} (generated by run_e2e.py)\n" + kir)
        if k == 0 and c.reject_ok:
            p = subprocess.run([opts.kinac, stem + ".kir", "-o", stem + ".o"] +
                               flags, cwd=work, capture_output=True,
                               text=True, timeout=300)
            text = (p.stdout + p.stderr).strip()
            if p.returncode == 1 and re.search(c.reject_ok, text):
                raise Rejected(text.splitlines()[0] if text else "")
        run_tool([opts.kinac, stem + ".kir", "-o", stem + ".o"] + flags, work,
                 "kinac", KINAC_TIMEOUT_S)
        run_tool([opts.kinac, stem + ".kir", "--emit=header", "-o",
                  stem + ".h"] + flags, work, "kinac --emit=header",
                 KINAC_TIMEOUT_S)
        objects.append(stem + ".o")
    if c.undefined_ok:
        for obj in objects:
            bad = sorted(u for u in symbols_undefined(os.path.join(work, obj))
                         if not re.fullmatch(c.undefined_ok, u))
            if bad:
                raise Failure(f"{obj} needs {', '.join(bad)}: not the "
                              f"runtime's, nor a libgcc 12 helper")
    if c.exported or c.hidden:
        syms = symbols_defined(os.path.join(work, "case.o"))
        for s in c.exported:
            if s not in syms:
                raise Failure(f"case.o does not define {s}")
        for s in c.hidden:
            if s in syms:
                raise Failure(f"case.o defines the global symbol {s}, which "
                              f"it must not export")
    with open(os.path.join(work, "harness.c"), "w") as f:
        f.write(generate_harness(c))
    run_tool([opts.cc] + shlex.split(opts.cflags) +
             ["-I.", "harness.c"] + objects + [opts.runtime] +
             shlex.split(opts.libs) + ["-o", "harness"], work, "cc", 120)
    problems = []
    for k, run in enumerate(c.runs):
        run_dir = os.path.join(work, f"run{k}")
        os.makedirs(run_dir)
        for i, a in enumerate(run.inputs):
            if a.dtype == np.bool_:
                le = a.astype(np.uint8)  # i1: one byte, 0 or 1
            else:
                le = a.astype(a.dtype.newbyteorder("<"))
            np.ascontiguousarray(le).tofile(
                os.path.join(run_dir, f"in{i}.bin"))
            with open(os.path.join(run_dir, f"in{i}.shape"), "w") as f:
                f.write(" ".join(str(d) for d in a.shape) + "\n")
        shapes = ", ".join(str(list(a.shape)) for a in run.inputs)
        try:
            p = subprocess.run([os.path.join(work, "harness"), run_dir],
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            problems.append(f"run {k} ({shapes}): timed out")
            continue
        status_file = os.path.join(run_dir, "status0.txt")
        if not os.path.exists(status_file):
            problems.append(f"run {k} ({shapes}): harness exit "
                            f"{p.returncode} without writing a status "
                            f"(a negative exit is a signal: crashed in the "
                            f"call?) {(p.stdout + p.stderr).strip()}")
            continue
        with open(status_file) as f:
            status = int(f.read())
        with open(os.path.join(run_dir, "message0.txt")) as f:
            message = f.read()
        live = os.path.join(run_dir, "live0.txt")
        if os.path.exists(live):
            with open(live) as f:
                before, after = (int(v) for v in f.read().split())
            if after != before:
                problems.append(f"run {k} ({shapes}): {after - before} "
                                f"runtime buffer(s) still live after the call "
                                f"(status {status}) and freeing its results")
        if status != run.status:
            problems.append(f"run {k} ({shapes}): status {status}, expected "
                            f"{run.status}; message: {message!r}")
            continue
        if status != 0:
            if not message:
                problems.append(f"run {k}: status {status} with an empty "
                                f"kina_last_error()")
            elif CORRUPT_MESSAGE.search(message):
                problems.append(f"run {k}: kina_last_error() looks corrupted "
                                f"(unterminated string?): {message!r}")
            elif run.message and not re.search(run.message, message, re.I):
                problems.append(f"run {k}: message {message!r} does not "
                                f"match /{run.message}/")
            continue
        if p.returncode != 0:
            problems.append(f"run {k} ({shapes}): harness exit "
                            f"{p.returncode}: {(p.stdout + p.stderr).strip()}")
            continue
        for j, ((t, r), ref) in enumerate(zip(c.results, run.expected)):
            try:
                got = read_output(run_dir, j, t, r)
            except Failure as e:
                problems.append(f"run {k}: {e}")
                continue
            tol = run.tol.get(j, DEFAULT_TOL.get(t, 0.0))
            diff = compare(got, ref.astype(NP_OF[t]), tol)
            if diff:
                problems.append(f"run {k} ({shapes}) result {j} ({t}): {diff}")
    return problems


def export_cases(selected, out):
    """--export-cases: one conformance-format case per run of every case
    (its functions renamed per case and run, `@f` -> `@f__<case>_r<k>`, so
    the runs of 8 cases compile into one module; a group that does not
    compile falls back to one module per run).
    Cases with more than one module or that kinac may refuse stay with the
    C harness only. Returns the number of case folders written."""
    os.makedirs(out, exist_ok=True)
    written = 0
    for index, (name, builder) in enumerate(selected):
        c = builder(np.random.default_rng(zlib.crc32(name.encode())))
        if c.others or c.reject_ok:
            continue
        kir = re.sub(r"^\s*module\s+@\S+\s*$", "", c.kir, flags=re.M)
        defined = re.findall(r"\bfunc\s+(?:private\s+)?@([\w.]+)", kir)
        group = f"e2e_{index // 8}"
        tag = re.sub(r"\W", "_", name)
        for k, run in enumerate(c.runs):
            renamed = kir
            for fn in defined:
                renamed = re.sub(r"@" + re.escape(fn) + r"(?![\w.])",
                                 f"@{fn}__{tag}_r{k}", renamed)
            folder = os.path.join(out, f"e2e_{name}__r{k}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "case.kir"), "w") as f:
                f.write(f"# e2e case {name}, run {k} (run_e2e.py "
                        f"--export-cases)\n" + renamed.strip() + "\n")
            inputs = []
            for i, a in enumerate(run.inputs):
                if c.args[i][1] == 0:  # the harness keeps rank 0 as (1,)
                    a = a.reshape(())
                # np.array, not np.ascontiguousarray (which makes rank 0
                # rank 1).
                np.save(os.path.join(folder, f"in{i}.npy"),
                        np.array(a.astype(a.dtype.newbyteorder("<")),
                                 order="C"))
                inputs.append({"file": f"in{i}.npy"})
            outputs = []
            if run.status == 0:
                for j, ((t, rank), ref) in enumerate(zip(c.results,
                                                         run.expected)):
                    if rank == 0:
                        ref = ref.reshape(())
                    np.save(os.path.join(folder, f"out{j}.npy"),
                            np.array(ref.astype(NP_OF[t]), order="C"))
                    tol = run.tol.get(j, DEFAULT_TOL.get(t, 0.0))
                    outputs.append({"file": f"out{j}.npy", "dtype": t,
                                    "tolerance": tol if tol else "exact"})
            meta = {"name": f"e2e_{name}__r{k}",
                    "function": f"{c.fn}__{tag}_r{k}",
                    "group": group,
                    "expect": ({"status": run.status, "message": []}
                               if run.status else {"status": 0}),
                    "inputs": inputs, "outputs": outputs,
                    "results": len(c.results)}
            with open(os.path.join(folder, "case.json"), "w") as f:
                json.dump(meta, f, indent=1)
            written += 1
    print(f"exported {written} runs of {len(selected)} cases to {out}")
    return written


def run_digits(opts):
    """Builds samples/digits with kinac and runs it on its data."""
    sample = os.path.abspath(opts.digits)
    work = os.path.join(opts.workdir, "digits")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        kir = os.path.join(sample, "mlp.kir")
        run_tool([opts.kinac, kir, "-o", "mlp.o"], work, "kinac", 300)
        run_tool([opts.kinac, kir, "--emit=header", "-o", "mlp.h"], work,
                 "kinac --emit=header", 300)
        run_tool([opts.cc] + shlex.split(opts.cflags) +
                 ["-I.", os.path.join(sample, "main.c"), "mlp.o",
                  opts.runtime] + shlex.split(opts.libs) + ["-o", "digits"],
                 work, "cc", 120)
        p = subprocess.run([os.path.join(work, "digits"),
                            os.path.join(sample, "data")],
                           capture_output=True, text=True, timeout=300)
    except Failure as e:
        print(f"FAIL digits\n  {str(e).replace(chr(10), chr(10) + '  ')}")
        return 1
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    lines = p.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    m = re.fullmatch(r"digits: N=1797 accuracy=(\d\.\d{4}) "
                     r"max_abs_diff=(\d\.\d\de[-+]\d+|inf|nan)", last)
    if p.returncode != 0 or not m:
        print(f"FAIL digits (exit {p.returncode}, last line {last!r})")
        return 1
    print(f"PASS digits (accuracy {m.group(1)}, max_abs_diff {m.group(2)})")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinac", required=True, help="path of kinac")
    ap.add_argument("--runtime", required=True,
                    help="path of libkina_runtime.a")
    ap.add_argument("--cc", default="cc", help="C compiler (default: cc)")
    ap.add_argument("--cflags", default="-std=c99 -Wall -Wextra -Werror -O1",
                    help="flags for the C harness (write --cflags=...)")
    ap.add_argument("--libs", default="-lstdc++ -lm",
                    help="libraries after the runtime archive, e.g. "
                    "--libs='-lstdc++ -lm -lpthread' (the runtime is C++ "
                    "inside; default: -lstdc++ -lm)")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="cases built and run in parallel (default 1)")
    ap.add_argument("--workdir", required=True, help="scratch directory")
    ap.add_argument("--filter", default="",
                    help="regex: run only the cases whose name matches")
    ap.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("--digits", metavar="SAMPLE_DIR",
                    help="build and run the digits sample instead")
    ap.add_argument("--export-cases", metavar="DIR", dest="export_cases",
                    help="write the runs as conformance cases into DIR "
                    "instead of running them")
    opts = ap.parse_args()
    opts.kinac = os.path.abspath(opts.kinac)
    opts.runtime = os.path.abspath(opts.runtime)
    os.makedirs(opts.workdir, exist_ok=True)
    opts.workdir = os.path.abspath(opts.workdir)
    if opts.digits:
        return run_digits(opts)
    selected = [(n, b) for n, b in CASES
                if not opts.filter or re.search(opts.filter, n)]
    if opts.list:
        print("\n".join(n for n, _ in selected))
        return 0
    if opts.export_cases:
        return 0 if export_cases(selected, opts.export_cases) else 1

    def attempt(item):
        """(problems, note) of one case."""
        try:
            return run_case(item[0], item[1], opts), ""
        except Rejected as e:
            return [], f" (kinac refused it, allowed: {e})"
        except Failure as e:
            return [str(e)], ""
        except Exception:  # a bug in this script: report, keep going
            return ["internal error in run_e2e.py:\n" +
                    traceback.format_exc()], ""

    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, opts.jobs)) as pool:
        outcomes = pool.map(attempt, selected)
        for (name, _), (problems, note) in zip(selected, outcomes):
            if problems:
                failed += 1
                print(f"FAIL {name}")
                for pr in problems:
                    print("  " + pr.replace("\n", "\n  "))
            else:
                passed += 1
                print(f"PASS {name}{note}")
            sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
