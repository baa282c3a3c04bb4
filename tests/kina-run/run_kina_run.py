#!/usr/bin/python3
"""End-to-end tests of `kinac --emit=shared`, `--emit=manifest` and kina-run.

The script writes two Kina IR modules, compiles each with `kinac
--emit=shared` (and `-shared`, and once with --symbol-prefix) and
`--emit=manifest`, and checks:
  - the manifest JSON (format, version, module, symbols, arguments and
    results with element types, ranks and dims), and that `kina-run LIB
    --manifest` prints the same bytes the library embeds;
  - kina-run on inputs written by NumPy (np.save, and NPY versions 2.0 and
    3.0 through numpy.lib.format): f32 matmul with a symbolic dim, f64
    reductions with two results, i32, f16 compared into i1, i1/i8 select,
    bf16 passed as '<u2' raw bits, a rank-0 tensor; outputs compared with
    NumPy, read back by np.load as NPY version 1.0;
  - the errors: dtype mismatch (exit 6, naming the file and both dtypes),
    a static or symbolic dim mismatch (exit 1 with the entry's message),
    wrong numbers of inputs or outputs, rank mismatch, a missing file, a
    file that is not NPY, Fortran order, big-endian, truncated data, an
    unknown function, a library without a manifest; no output file is
    written (an existing one is left untouched) when a run fails;
  - kinac: the default output names, the `@module_manifest` collision, and
    no partial .so on failure;
  - two different libraries dlopen'ed RTLD_LOCAL into one C program (both
    export kina_module_manifest, kina_forward and the runtime): each call
    reaches its own module and runtime, nothing leaks into the global
    scope, and with -Bsymbolic a library loaded after one opened RTLD_GLOBAL
    still counts its buffers in its own runtime.
Prints `PASS name` / `FAIL name` per check and `N passed, N failed`; exits 1
if anything failed. Needs NumPy and a C compiler.
"""

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import traceback

import numpy as np

MLP_KIR = """module @mlp

# relu(x @ w + b) with a symbolic batch dim
func @forward(%x: f32[N, 4], %w: f32[4, 3], %b: f32[3]) -> f32[N, 3] {
  %h = matmul %x, %w
  %h1 = add %h, %b
  %y = relu %h1
  return %y
}

func @stats(%x: f64[?, 5]) -> (f64[5], i64[?]) {
  %s = reduce_sum %x {axes = [0]}
  %a = argmax %x {axis = 1}
  return %s, %a
}

func @pair(%a: f32[N], %b: f32[N]) -> f32[N] {
  %c = sub %a, %b
  return %c
}
"""

TYPES_KIR = """module @types

func @forward(%a: i32[3], %b: i32[3]) -> i32[3] {
  %c = add %a, %b
  return %c
}

func @cmp(%a: f16[4], %b: f16[4]) -> i1[4] {
  %c = lt %a, %b
  return %c
}

func @pick(%m: i1[4], %x: i8[4], %y: i8[4]) -> i8[4] {
  %r = select %m, %x, %y
  return %r
}

func @widen(%x: bf16[2, ?]) -> (f32[2, ?], bf16[?, 2]) {
  %z = cast %x {to = f32}
  %t = transpose %x {perm = [1, 0]}
  return %z, %t
}

func @square(%x: f32) -> f32 {
  %y = mul %x, %x
  return %y
}
"""

CLASH_KIR = """module @clash

func @module_manifest(%x: f32[2]) -> f32[2] {
  %y = neg %x
  return %y
}
"""

TWO_LIBS_C = r"""
/* Loads two kinac shared libraries into one process and calls both. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "kina/abi.h"

typedef const char *(*manifest_fn)(void);
typedef int32_t (*free_fn)(void *);
typedef int64_t (*count_fn)(void);
typedef int32_t (*mlp_fn)(KinaMemRef2 *, const KinaMemRef2 *,
                          const KinaMemRef2 *, const KinaMemRef1 *);
typedef int32_t (*add_fn)(KinaMemRef1 *, const KinaMemRef1 *,
                          const KinaMemRef1 *);

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
  return p;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int first_global = strcmp(argv[3], "global") == 0;
  void *a = dlopen(argv[1], RTLD_NOW | (first_global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!a) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  void *b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!b) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  CHECK(a != b);

  manifest_fn ma = (manifest_fn)sym(a, "kina_module_manifest");
  manifest_fn mb = (manifest_fn)sym(b, "kina_module_manifest");
  CHECK(ma && mb && ma != mb);
  CHECK(strstr(ma(), "\"module\": \"mlp\"") != NULL);
  CHECK(strstr(mb(), "\"module\": \"types\"") != NULL);
  if (!first_global)
    CHECK(dlsym(RTLD_DEFAULT, "kina_module_manifest") == NULL);

  mlp_fn fa = (mlp_fn)sym(a, "kina_forward");
  add_fn fb = (add_fn)sym(b, "kina_forward");
  free_fn free_a = (free_fn)sym(a, "runtime_free");
  free_fn free_b = (free_fn)sym(b, "runtime_free");
  count_fn live_a = (count_fn)sym(a, "runtime_live_buffer_count");
  count_fn live_b = (count_fn)sym(b, "runtime_live_buffer_count");
  CHECK(fa && fb && free_a && free_b && live_a && live_b);
  CHECK((void *)fa != (void *)fb);
  CHECK(free_a != free_b && live_a != live_b);

  /* Module types: [1, 2, 3] + [10, 20, 30]. */
  int32_t x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  KinaMemRef1 dx = {x, x, 0, {3}, {1}}, dy = {y, y, 0, {3}, {1}}, out;
  CHECK(fb(&out, &dx, &dy) == 0);
  CHECK(((int32_t *)out.aligned)[2] == 33);
  /* Its buffer is recorded by its own runtime only. */
  CHECK(live_b() == 1);
  CHECK(live_a() == 0);

  /* Module mlp: relu(x @ w + b), x = ones(2, 4), w = 0.5, b = [-3, 0, 1]. */
  float xm[8], wm[12], bm[3] = {-3.f, 0.f, 1.f};
  for (int i = 0; i < 8; ++i) xm[i] = 1.f;
  for (int i = 0; i < 12; ++i) wm[i] = 0.5f;
  KinaMemRef2 dxm = {xm, xm, 0, {2, 4}, {4, 1}};
  KinaMemRef2 dwm = {wm, wm, 0, {4, 3}, {3, 1}};
  KinaMemRef1 dbm = {bm, bm, 0, {3}, {1}};
  KinaMemRef2 om;
  CHECK(fa(&om, &dxm, &dwm, &dbm) == 0);
  CHECK(om.sizes[0] == 2 && om.sizes[1] == 3);
  const float *r = (const float *)om.aligned;
  CHECK(r[0] == 0.f && r[1] == 2.f && r[2] == 3.f && r[5] == 3.f);
  CHECK(live_a() == 1 && live_b() == 1);

  /* Each buffer belongs to its own runtime. */
  CHECK(free_a(out.allocated) == 1);
  CHECK(free_b(out.allocated) == 0);
  CHECK(free_a(om.allocated) == 0);
  CHECK(live_a() == 0 && live_b() == 0);
  printf("ok\n");
  return 0;
}
"""


class Runner:
    def __init__(self, args):
        self.kinac = os.path.abspath(args.kinac)
        self.kina_run = os.path.abspath(args.kina_run)
        self.cc = args.cc
        self.include = os.path.abspath(args.include)
        self.work = os.path.abspath(args.workdir)
        self.passed = 0
        self.failed = 0

    def check(self, name, fn):
        try:
            fn()
        except Exception:  # noqa: BLE001 - every failure is reported
            self.failed += 1
            print(f"FAIL {name}")
            traceback.print_exc(file=sys.stdout)
            return
        self.passed += 1
        print(f"PASS {name}")

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, argv, **kw):
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=300, **kw)

    def kinac_ok(self, *args):
        p = self.run([self.kinac, *args])
        assert p.returncode == 0, f"kinac {args} failed:\n{p.stderr}"
        return p

    def kr(self, *args):
        return self.run([self.kina_run, *args])

    def save(self, name, array):
        path = self.path(name)
        np.save(path, array)
        return path


def assert_fails(p, status, *parts):
    assert p.returncode == status, (
        f"exit {p.returncode}, expected {status}\nstderr: {p.stderr}")
    for part in parts:
        assert part in p.stderr, f"stderr lacks {part!r}:\n{p.stderr}"


def bf16_bits(a):
    """float32 -> bf16 raw bits, rounding to nearest even (ml_dtypes')."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--kina-run", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--include", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    t = Runner(args)
    rng = np.random.default_rng(1234)

    for name, text in [("mlp.kir", MLP_KIR), ("types.kir", TYPES_KIR),
                       ("clash.kir", CLASH_KIR)]:
        with open(t.path(name), "w") as f:
            f.write(text)
    mlp_so, types_so = t.path("mlp.so"), t.path("types.so")

    # --- kinac -----------------------------------------------------------
    def build():
        t.kinac_ok(t.path("mlp.kir"), "--emit=shared", "-o", mlp_so)
        t.kinac_ok(t.path("types.kir"), "-shared", "-o", types_so)
        for so in (mlp_so, types_so):
            assert os.path.getsize(so) > 0
        nm = t.run(["nm", "-D", "--defined-only", mlp_so])
        for s in ("kina_forward", "_mlir_ciface_forward", "kina_stats",
                  "kina_module_manifest", "runtime_free", "kina_last_error"):
            assert f" T {s}\n" in nm.stdout, f"{s} not exported"
    t.check("kinac.emit_shared", build)

    def default_names():
        d = t.path("defaults")
        os.makedirs(d)
        shutil.copy(t.path("mlp.kir"), d)
        t.run([t.kinac, "mlp.kir", "--emit=shared"], cwd=d)
        t.run([t.kinac, "mlp.kir", "--emit=manifest"], cwd=d)
        assert sorted(os.listdir(d)) == ["mlp.json", "mlp.kir", "mlp.so"], \
            os.listdir(d)
    t.check("kinac.default_output_names", default_names)

    def clash():
        out = t.path("clash.so")
        p = t.run([t.kinac, t.path("clash.kir"), "--emit=shared", "-o", out])
        assert_fails(p, 1, "clash.kir:3:6: error: function name "
                     "@module_manifest collides with the runtime: its symbol "
                     "'kina_module_manifest'")
        assert not os.path.exists(out)
        p = t.run([t.kinac, t.path("clash.kir"), "--emit=manifest"])
        assert_fails(p, 1, "kina_module_manifest")
        # With a prefix the entry is kina_p_module_manifest: no clash.
        t.kinac_ok(t.path("clash.kir"), "--emit=shared",
                   "--symbol-prefix=p_", "-o", out)
        assert os.path.exists(out)
    t.check("kinac.manifest_symbol_clash", clash)

    def no_partial():
        out = t.path("kept.so")
        with open(out, "w") as f:
            f.write("previous")
        bad = t.path("bad.kir")
        with open(bad, "w") as f:
            f.write("func @f(%x: f32[2]) -> f32[2] {\n  %y = nope %x\n"
                    "  return %y\n}\n")
        p = t.run([t.kinac, bad, "--emit=shared", "-o", out])
        assert p.returncode == 1
        with open(out) as f:
            assert f.read() == "previous"
        leftovers = [n for n in os.listdir(t.work) if ".tmp-" in n]
        assert not leftovers, leftovers
    t.check("kinac.no_partial_output", no_partial)

    # --- manifest ----------------------------------------------------------
    def manifest():
        p = t.kinac_ok(t.path("mlp.kir"), "--emit=manifest", "-o", "-")
        m = json.loads(p.stdout)
        assert m["format"] == "kina-manifest" and m["version"] == 1
        assert m["module"] == "mlp" and m["symbol_prefix"] == ""
        assert m["generator"].startswith("kinac ")
        fns = {f["name"]: f for f in m["functions"]}
        assert list(fns) == ["forward", "stats", "pair"]
        fwd = fns["forward"]
        assert fwd["symbols"] == {"entry": "kina_forward",
                                  "c_interface": "_mlir_ciface_forward",
                                  "tensor_desc": "kinatd_forward"}
        assert fwd["arguments"] == [
            {"name": "x", "element_type": "f32", "rank": 2, "dims": ["N", 4]},
            {"name": "w", "element_type": "f32", "rank": 2, "dims": [4, 3]},
            {"name": "b", "element_type": "f32", "rank": 1, "dims": [3]}]
        assert fwd["results"] == [
            {"name": "y", "element_type": "f32", "rank": 2, "dims": ["N", 3]}]
        st = fns["stats"]
        assert [r["element_type"] for r in st["results"]] == ["f64", "i64"]
        assert st["results"][1]["dims"] == ["?"]
        assert st["arguments"][0]["dims"] == ["?", 5]
        # The library embeds the same bytes.
        q = t.kr(mlp_so, "--manifest")
        assert q.returncode == 0, q.stderr
        assert q.stdout == p.stdout
        # Written to a file, it is the same again.
        t.kinac_ok(t.path("mlp.kir"), "--emit=manifest", "-o",
                   t.path("mlp.json"))
        with open(t.path("mlp.json")) as f:
            assert f.read() == p.stdout
    t.check("manifest.mlp", manifest)

    def manifest_types():
        p = t.kinac_ok(t.path("types.kir"), "--emit=manifest",
                       "--symbol-prefix=t_", "-o", "-")
        m = json.loads(p.stdout)
        assert m["symbol_prefix"] == "t_"
        fns = {f["name"]: f for f in m["functions"]}
        assert fns["forward"]["symbols"]["entry"] == "kina_t_forward"
        assert fns["square"]["arguments"][0] == {
            "name": "x", "element_type": "f32", "rank": 0, "dims": []}
        assert [a["element_type"] for a in fns["pick"]["arguments"]] == \
            ["i1", "i8", "i8"]
        assert fns["widen"]["results"][1]["element_type"] == "bf16"
        # A prefixed library runs by the Kina name.
        so = t.path("types_t.so")
        t.kinac_ok(t.path("types.kir"), "--emit=shared",
                   "--symbol-prefix=t_", "-o", so)
        q = t.kr(so, "--manifest")
        assert q.stdout == p.stdout
        a = t.save("ta.npy", np.array([1, 2, 3], np.int32))
        out = t.path("t_out.npy")
        r = t.kr(so, "forward", "--in", a, "--in", a, "--out", out)
        assert r.returncode == 0, r.stderr
        assert np.load(out).tolist() == [2, 4, 6]
    t.check("manifest.types_with_prefix", manifest_types)

    # --- kina-run: values ----------------------------------------------------
    def mlp_forward():
        x = rng.standard_normal((5, 4)).astype(np.float32)
        w = rng.standard_normal((4, 3)).astype(np.float32)
        b = rng.standard_normal(3).astype(np.float32)
        out = t.path("y.npy")
        p = t.kr(mlp_so, "forward", "--in", t.save("x.npy", x),
                 "--in", t.save("w.npy", w), "--in", t.save("b.npy", b),
                 "--out", out, "--check-leaks")
        assert p.returncode == 0, p.stderr
        ref = np.maximum(x.astype(np.float64) @ w + b, 0)
        with open(out, "rb") as f:
            assert f.read(8) == b"\x93NUMPY\x01\x00"
        y = np.load(out)
        assert y.dtype == np.float32 and y.shape == (5, 3)
        assert np.allclose(y, ref, rtol=1e-5, atol=1e-5), (y, ref)
    t.check("run.f32_matmul_symbolic_batch", mlp_forward)

    def mlp_zero_batch():
        out = t.path("y0.npy")
        p = t.kr(mlp_so, "forward",
                 "--in", t.save("x0.npy", np.zeros((0, 4), np.float32)),
                 "--in", t.save("w.npy", np.ones((4, 3), np.float32)),
                 "--in", t.save("b.npy", np.ones(3, np.float32)),
                 "--out", out)
        assert p.returncode == 0, p.stderr
        y = np.load(out)
        assert y.shape == (0, 3) and y.dtype == np.float32
    t.check("run.empty_batch", mlp_zero_batch)

    def stats_two_results():
        x = rng.standard_normal((6, 5))
        s_out, a_out = t.path("s.npy"), t.path("a.npy")
        p = t.kr(mlp_so, "stats", "--in", t.save("xs.npy", x),
                 "--out", s_out, "--out", a_out, "--check-leaks")
        assert p.returncode == 0, p.stderr
        s, a = np.load(s_out), np.load(a_out)
        assert s.dtype == np.float64 and a.dtype == np.int64
        assert np.allclose(s, x.sum(axis=0), rtol=1e-12)
        assert (a == x.argmax(axis=1)).all()
    t.check("run.f64_two_results", stats_two_results)

    def npy_versions():
        x = rng.standard_normal((6, 5))
        for version in [(1, 0), (2, 0), (3, 0)]:
            path = t.path(f"xv{version[0]}.npy")
            with open(path, "wb") as f:
                np.lib.format.write_array(f, x, version=version)
            with open(path, "rb") as f:
                assert f.read(8)[6] == version[0]
            s_out, a_out = t.path("sv.npy"), t.path("av.npy")
            p = t.kr(mlp_so, "stats", "--in", path, "--out", s_out,
                     "--out", a_out)
            assert p.returncode == 0, (version, p.stderr)
            assert np.allclose(np.load(s_out), x.sum(axis=0), rtol=1e-12)
    t.check("run.npy_versions_1_2_3", npy_versions)

    def int_and_small_types():
        a = np.array([1, -2, 2**31 - 1], np.int32)
        b = np.array([10, 20, 1], np.int32)
        out = t.path("i.npy")
        p = t.kr(types_so, "forward", "--in", t.save("ia.npy", a),
                 "--in", t.save("ib.npy", b), "--out", out)
        assert p.returncode == 0, p.stderr
        got = np.load(out)
        assert got.dtype == np.int32
        assert got.tolist() == [11, 18, -(2**31)]  # wraps

        h1 = np.array([1, 2, -np.inf, np.nan], np.float16)
        h2 = np.array([2, 2, 0, 1], np.float16)
        out = t.path("c.npy")
        p = t.kr(types_so, "cmp", "--in", t.save("h1.npy", h1),
                 "--in", t.save("h2.npy", h2), "--out", out)
        assert p.returncode == 0, p.stderr
        c = np.load(out)
        assert c.dtype == np.bool_ and c.tolist() == (h1 < h2).tolist()
        with open(out, "rb") as f:
            assert b"'descr': '|b1'" in f.read(128)

        m = np.array([True, False, True, False])
        x = np.array([1, 2, 3, 4], np.int8)
        y = np.array([-1, -2, -3, -4], np.int8)
        out = t.path("p.npy")
        p = t.kr(types_so, "pick", "--in", t.save("m.npy", m),
                 "--in", t.save("i8x.npy", x), "--in", t.save("i8y.npy", y),
                 "--out", out)
        assert p.returncode == 0, p.stderr
        got = np.load(out)
        assert got.dtype == np.int8 and got.tolist() == [1, -2, 3, -4]

        out = t.path("sq.npy")
        p = t.kr(types_so, "square", "--in",
                 t.save("scalar.npy", np.float32(-3.5)), "--out", out)
        assert p.returncode == 0, p.stderr
        got = np.load(out)
        assert got.shape == () and got == np.float32(12.25)
    t.check("run.i32_f16_i1_i8_rank0", int_and_small_types)

    def bf16():
        vals = np.array([[1.5, -2.25, 3.0], [0.1, 1e30, -0.0]], np.float32)
        bits = bf16_bits(vals)
        z_out, t_out = t.path("bz.npy"), t.path("bt.npy")
        p = t.kr(types_so, "widen", "--in", t.save("bits.npy", bits),
                 "--out", z_out, "--out", t_out, "--check-leaks")
        assert p.returncode == 0, p.stderr
        z, tr = np.load(z_out), np.load(t_out)
        widened = (bits.astype(np.uint32) << 16).view(np.float32)
        assert z.dtype == np.float32 and np.array_equal(z, widened)
        assert tr.dtype == np.uint16 and np.array_equal(tr, bits.T)
        # float32 data for a bf16 argument is a type error.
        p = t.kr(types_so, "widen", "--in", t.save("f.npy", vals),
                 "--out", z_out, "--out", t_out)
        assert_fails(p, 6, "f.npy", "'<u2'", "'<f4'")
    t.check("run.bf16_as_u2_bits", bf16)

    # --- kina-run: errors ----------------------------------------------------
    x = t.save("ex.npy", np.ones((2, 4), np.float32))
    w = t.save("ew.npy", np.ones((4, 3), np.float32))
    b = t.save("eb.npy", np.ones(3, np.float32))
    out = t.path("err_out.npy")

    def run_mlp(*inputs, outs=(out,)):
        argv = [mlp_so, "forward"]
        for i in inputs:
            argv += ["--in", i]
        for o in outs:
            argv += ["--out", o]
        return t.kr(*argv)

    def no_output():
        assert not os.path.exists(out), "output written on failure"

    def dtype_mismatch():
        p = run_mlp(t.save("x64.npy", np.ones((2, 4))), w, b)
        assert_fails(p, 6, "x64.npy", "'<f4'", "'<f8'", "float64", "%x")
        no_output()
        p = run_mlp(x, t.save("wi.npy", np.ones((4, 3), np.int32)), b)
        assert_fails(p, 6, "wi.npy", "'<i4'")
    t.check("error.dtype_mismatch_is_6", dtype_mismatch)

    def shape_mismatch():
        p = run_mlp(x, t.save("w53.npy", np.ones((5, 3), np.float32)), b)
        assert_fails(p, 1, "kina_forward returned 1 (Validation Error)",
                     "kina_forward: argument %w dim 0 has size 5, "
                     "expected 4")
        no_output()
        p = run_mlp(x, w, t.save("b4.npy", np.ones(4, np.float32)))
        assert_fails(p, 1, "argument %b dim 0 has size 4, expected 3")
    t.check("error.shape_mismatch_is_1_with_entry_message", shape_mismatch)

    def symbolic_mismatch():
        p = t.kr(mlp_so, "pair",
                 "--in", t.save("p3.npy", np.ones(3, np.float32)),
                 "--in", t.save("p4.npy", np.ones(4, np.float32)),
                 "--out", out)
        assert_fails(p, 1, "kina_pair: argument %b dim 0 (N) has size 4, "
                     "but N = 3")
        no_output()
    t.check("error.symbolic_dim_mismatch_is_1", symbolic_mismatch)

    def wrong_outputs():
        xs = t.save("xs6.npy", np.ones((6, 5)))
        p = t.kr(mlp_so, "stats", "--in", xs, "--out", t.path("o1.npy"))
        assert_fails(p, 1, "returns 2 results, got 1 --out files")
        assert not os.path.exists(t.path("o1.npy"))
    t.check("error.wrong_number_of_outputs", wrong_outputs)

    def counts_and_ranks():
        p = run_mlp(x, w)
        assert_fails(p, 1, "@forward takes 3 arguments, got 2 --in files")
        p = run_mlp(x, w, b, b)
        assert_fails(p, 1, "takes 3 arguments, got 4")
        p = run_mlp(x, b, b)
        assert_fails(p, 1, "eb.npy", "rank 2", "shape (3,) (rank 1)")
        no_output()
    t.check("error.counts_and_ranks_are_1", counts_and_ranks)

    def bad_files():
        p = run_mlp(t.path("missing.npy"), w, b)
        assert_fails(p, 1, "missing.npy: cannot open")
        garbage = t.path("garbage.npy")
        with open(garbage, "w") as f:
            f.write("not an array\n")
        assert_fails(run_mlp(garbage, w, b), 1,
                     "garbage.npy: not an NPY file")
        fortran = t.path("fortran.npy")
        np.save(fortran, np.asfortranarray(np.ones((2, 4), np.float32)))
        assert_fails(run_mlp(fortran, w, b), 1, "fortran.npy", "Fortran")
        big = t.save("big.npy", np.ones((2, 4), ">f4"))
        assert_fails(run_mlp(big, w, b), 1, "big.npy", "big-endian")
        obj = t.path("obj.npy")
        np.save(obj, np.array([{"a": 1}, None], dtype=object),
                allow_pickle=True)
        assert_fails(run_mlp(obj, w, b), 1, "obj.npy", "object arrays")
        trunc = t.path("trunc.npy")
        with open(x, "rb") as f:
            data = f.read()
        with open(trunc, "wb") as f:
            f.write(data[:-5])
        assert_fails(run_mlp(trunc, w, b), 1, "trunc.npy", "truncated data")
        no_output()
    t.check("error.bad_npy_files_are_1", bad_files)

    def existing_output_untouched():
        with open(out, "w") as f:
            f.write("previous")
        p = run_mlp(t.save("w53.npy", np.ones((5, 3), np.float32)), w, b)
        assert p.returncode != 0
        with open(out) as f:
            assert f.read() == "previous"
        os.remove(out)
    t.check("error.existing_output_untouched", existing_output_untouched)

    def library_errors():
        p = t.kr(mlp_so, "backward", "--in", x)
        assert_fails(p, 1, "exports no function @backward",
                     "@forward, @stats, @pair")
        p = t.kr(t.path("nope.so"), "--manifest")
        assert_fails(p, 1, "nope.so: cannot load the library")
        plain_c = t.path("plain.c")
        with open(plain_c, "w") as f:
            f.write("int plain(void) { return 1; }\n")
        plain_so = t.path("plain.so")
        q = t.run([t.cc, "-shared", "-fPIC", "-o", plain_so, plain_c])
        assert q.returncode == 0, q.stderr
        p = t.kr(plain_so, "--manifest")
        assert_fails(p, 1, "plain.so", "kina_module_manifest")
        p = t.kr(mlp_so)
        assert_fails(p, 1, "no function given")
        p = t.kr()
        assert p.returncode == 1
    t.check("error.library_and_function", library_errors)

    # --- two libraries in one process ---------------------------------------
    def two_libraries():
        src = t.path("two_libs.c")
        with open(src, "w") as f:
            f.write(TWO_LIBS_C)
        exe = t.path("two_libs")
        q = t.run([t.cc, "-std=c99", "-D_GNU_SOURCE", "-I", t.include, src,
                   "-o", exe, "-ldl"])
        assert q.returncode == 0, q.stderr
        for mode in ("local", "global"):
            p = t.run([exe, mlp_so, types_so, mode])
            assert p.returncode == 0 and p.stdout == "ok\n", \
                (mode, p.stdout, p.stderr)
    t.check("dlopen.two_libraries_one_process", two_libraries)

    print(f"{t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
