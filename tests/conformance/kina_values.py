"""Element types, exact rounding and NPY storage for the conformance suite.

Shared by generate.py (which computes the expected outputs) and
run_conformance.py (which compares kina-run's outputs with them); needs only
NumPy. Values are handled as float64 arrays for the float types (every f32,
f16 and bf16 value is exactly a float64), int64 arrays for i64/i32/i8 and
bool arrays for i1. `round_float` rounds float64 values to a narrower float
type once, to nearest with ties to even (IEEE 754), with its own arithmetic
so that bf16, which NumPy lacks, is rounded the same way as f16 and f32
(generate.py checks it against NumPy's own f32 and f16 conversions). On
disk every element type travels as kina-run reads and writes it: f64 `<f8`,
f32 `<f4`, f16 `<f2`, bf16 `<u2` (the raw bits), i64 `<i8`, i32 `<i4`, i8
`|i1`, i1 `|b1`.
"""

import numpy as np

FLOATS = ["f64", "f32", "f16", "bf16"]
INTS = ["i64", "i32", "i8"]
DTYPES = FLOATS + INTS + ["i1"]

# The NPY dtype of each Kina element type (kina-run's convention).
NPY = {
    "f64": "<f8",
    "f32": "<f4",
    "f16": "<f2",
    "bf16": "<u2",
    "i64": "<i8",
    "i32": "<i4",
    "i8": "|i1",
    "i1": "|b1",
}

# (significand bits with the implicit one, minimum normal exponent,
# maximum exponent) of each float type.
FLOAT_FORMAT = {
    "f64": (53, -1022, 1023),
    "f32": (24, -126, 127),
    "f16": (11, -14, 15),
    "bf16": (8, -126, 127),
}

INT_BITS = {"i64": 64, "i32": 32, "i8": 8}


def is_float(dt):
    return dt in FLOATS


def is_int(dt):
    return dt in INTS


def int_range(dt):
    """(min, max) of a signed integer type, as Python ints."""
    bits = INT_BITS[dt]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def float_max(dt):
    """The largest finite value of a float type."""
    p, _, emax = FLOAT_FORMAT[dt]
    return float(np.ldexp(2.0 - 2.0 ** (1 - p), emax))


def float_min_normal(dt):
    return float(np.ldexp(1.0, FLOAT_FORMAT[dt][1]))


def float_min_subnormal(dt):
    p, emin, _ = FLOAT_FORMAT[dt]
    return float(np.ldexp(1.0, emin - (p - 1)))


def round_float(x, dt):
    """float64 values rounded once to the float type `dt`, to nearest with
    ties to even; overflow gives a signed infinity, NaN stays NaN, the sign
    of zero is kept. The result is float64 holding values of `dt`."""
    x = np.array(x, dtype=np.float64)
    if dt == "f64":
        return x
    p, emin, _ = FLOAT_FORMAT[dt]
    out = x.copy()
    sel = np.isfinite(x) & (x != 0)
    v = x[sel]
    if v.size:
        _, e = np.frexp(np.abs(v))  # |v| = m * 2**e with m in [0.5, 1)
        lead = np.maximum(e - 1, emin)  # subnormals share emin's quantum
        quantum = lead - (p - 1)
        # Scaling by powers of two is exact; np.round rounds half to even.
        with np.errstate(over="ignore"):
            r = np.ldexp(np.round(np.ldexp(v, -quantum)), quantum)
        r = np.where(np.abs(r) > float_max(dt), np.copysign(np.inf, v), r)
        out[sel] = r
    return out


def round_int_to_float(values, dt):
    """Python ints rounded once to the float type `dt` (ties to even), as a
    float64 array: exact even for i64 values beyond 2**53."""
    p = FLOAT_FORMAT[dt][0]
    out = []
    for n in np.asarray(values, dtype=object).ravel():
        n = int(n)
        mag = abs(n)
        length = mag.bit_length()
        if length > p:
            shift = length - p
            q, rem = mag >> shift, mag & ((1 << shift) - 1)
            half = 1 << (shift - 1)
            if rem > half or (rem == half and (q & 1)):
                q += 1
            mag = q << shift
        f = float(mag)  # exact: at most p significant bits
        out.append(-f if n < 0 else f)
    arr = np.array(out, dtype=np.float64).reshape(np.shape(values))
    return round_float(arr, dt)  # only overflow (f16) can still happen


def wrap(values, dt):
    """Python ints (any array) wrapped to the two's complement of `dt`, as
    an int64 array."""
    bits = INT_BITS[dt]
    m = 1 << bits
    arr = np.asarray(values, dtype=object)
    flat = [((int(v) + (m >> 1)) % m) - (m >> 1) for v in arr.ravel()]
    return np.array(flat, dtype=np.int64).reshape(arr.shape)


def bf16_bits(x):
    """uint16 bits of float64 values that bf16 holds exactly."""
    shape = np.shape(x)
    f = np.array(x, dtype=np.float64).astype(np.float32).reshape(-1)
    bits = (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    # NaN as the quiet NaN 0x7fc0 (keeps the sign of NaN out of the file).
    bits = np.where(np.isnan(f), np.uint16(0x7FC0), bits)
    return bits.astype("<u2").reshape(shape)


def bf16_values(bits):
    """float64 values of bf16 raw bits."""
    shape = np.shape(bits)
    b = np.array(bits, dtype=np.uint16).astype(np.uint32).reshape(-1)
    b = b << np.uint32(16)
    return b.view(np.float32).astype(np.float64).reshape(shape)


def to_storage(values, dt):
    """The NPY array that carries `values` (already exact in `dt`)."""
    if dt == "bf16":
        return bf16_bits(values)
    if dt == "i1":
        return np.asarray(values, dtype=bool)
    arr = np.asarray(values)
    if is_float(dt):
        back = arr.astype(NPY[dt])
        ok = np.isnan(arr) | (back.astype(np.float64) == arr)
        if not np.all(ok):
            raise ValueError(f"values not exact in {dt}")
        return back
    lo, hi = int_range(dt)
    if arr.size and (arr.min() < lo or arr.max() > hi):
        raise ValueError(f"values out of range for {dt}")
    return arr.astype(NPY[dt])


def from_storage(arr, dt):
    """Values of an NPY array holding `dt` (see the module comment)."""
    if dt == "bf16":
        return bf16_values(arr)
    if is_float(dt):
        return np.asarray(arr).astype(np.float64)
    if dt == "i1":
        return np.asarray(arr).astype(bool)
    return np.asarray(arr).astype(np.int64)
