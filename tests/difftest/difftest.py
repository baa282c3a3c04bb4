#!/usr/bin/python3
"""Differential random testing of kinac (docs/reliability.md).

For each seed, kgen.py generates a random valid Kina program with its
inputs, and kref.py computes its outputs from the spec. Several programs
are compiled together as one module (`kinac --emit=shared`; if that fails,
each alone, so every failure belongs to one program), run with `kina-run`
and compared with the reference (kref.py explains the comparison). Each
failure is classified:
  compile_crash   kinac died by a signal or reported an internal error
  compile_error   kinac rejected the valid program (exit 1)
  link_error      kinac's link step failed (an undefined symbol, ...)
  run_crash       kina-run died by a signal
  run_status      kina-run returned a non-zero status on valid inputs
  wrong_result    an output differs from the reference
  timeout         kinac or kina-run ran past the time limit
then the first failure of each kind is reduced (delete statements,
feeding their reference values in as new parameters; drop results,
attributes, helpers; simplify inputs) while the same failure persists, and
each is written to a folder of --out. With --known, the bugs of known.py
are reported as XFAIL (not reduced: regressions/ has them reduced).
Some programs are also mutated into invalid ones (an undefined value, a
mismatched element type, an axis out of range, a zero step, an unknown
attribute, a wrong annotation, ...); kinac must exit 1 with a located
`FILE:LINE:COL: error:` at the mutated line, write no output and leave an
existing output untouched (class bad_diagnostic otherwise).

  difftest.py [--seconds N | --seeds A:B] [--kinac P] [--kina-run P]
              [--out DIR] [--batch K] [--no-reduce]
              [--target=cpu|cuda [--compile-only]]
  difftest.py --replay tests/difftest/regressions [...]
  difftest.py --kinac P --target=cuda --seeds A:B --build-only OUT
  difftest.py --kina-run P --prebuilt OUT [--seeds A:B] [-j N]

--target=cuda compiles with `kinac --target=cuda`; --compile-only (a
machine without a CUDA driver) counts a program as checked once kinac
built it and kina-run loaded it, found its function, took its inputs and
stopped with status 3, "CUDA driver not found". A GPU machine has no kinac,
so the work splits in two (as run_conformance.py's): --build-only OUT (the
development machine) generates the programs of --seeds, compiles them
(--batch per library, -j libraries at a time) and writes the libraries
(stripped, xz-compressed), each program's text, inputs and expectation
(expectation(): the reference values and, per element, whether it is
compared and the error allowed, so the comparison there is this one) and
OUT/index.json; --prebuilt OUT (the GPU machine: Python 3 and NumPy, this
folder's difftest.py, kgen.py, kref.py, known.py and kina_values.py) runs
them with kina-run, prints each failure with its seed, program, inputs,
expected and got results and the command that reproduces and reduces it on
the development machine (the same seed generates the same program), then
`N passed, N failed`. A program that did not build is a failure there too.

Prints `N passed, N failed` (programs and mutants); exits 1 if any failed.
--replay runs the regression cases (each a folder: case.kir, program.json,
in<k>.npy, out<k>.npy, case.json); a case whose case.json has "xfail" must
still fail (with its recorded class) until the bug is fixed, then its
marker must be removed (an unexpected pass fails the replay).
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# One BLAS thread: the reference's matrices are tiny, and idle OpenBLAS
# threads spin on the CPUs kinac needs.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import kgen  # noqa: E402
import kref  # noqa: E402
import known  # noqa: E402
from kgen import Invalid, Lit, Stmt, DT  # noqa: E402
from kina_values import NPY, from_storage, to_storage, is_float  # noqa: E402

TOLERANCE = {"f64": 1e-12, "f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}
TIMEOUT = 120


MEMORY_LIMIT = 4 << 30  # bytes of address space for kinac and kina-run


def no_core():
    # A crashing kinac would otherwise spend seconds writing a core file;
    # a compile that runs away with memory (it happened) must not take
    # the machine with it.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def no_core_gpu():
    # No address-space limit: cuInit reserves far more than 4 GiB of
    # virtual addresses (the unified address space) and fails with
    # CUDA_ERROR_OUT_OF_MEMORY under one (seen on the H200).
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, timeout=TIMEOUT, gpu=False):
    """(exit status or "timeout", standard error) of `cmd`; `gpu`: it may
    initialise CUDA (no address-space limit then)."""
    env = dict(os.environ, LLVM_DISABLE_SYMBOLIZATION="1")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout,
                           preexec_fn=no_core_gpu if gpu else no_core,
                           env=env)
        return p.returncode, p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", f"timed out after {timeout} s"


# ------------------------------------------------------------- comparison

def expectation(refs, dt):
    """What an output must hold, from the reference modes `refs` ({mode:
    array of values}, kref.py's module comment): {"base": the base mode's
    values, "stable": where the modes agree on the NaN/inf/integer value
    (only there is an element compared), "allow": for floats, the error
    allowed at each element (the class's tolerance relative to max(1,
    |base|), or twice the largest deviation between the modes)}. Written
    into the --build-only artefacts so that --prebuilt compares exactly as
    here without kref.py's modes."""
    base = refs["base"]
    others = [refs[m] for m in refs if m != "base"]
    stable = np.ones(base.shape, bool)
    if not is_float(dt):
        for o in others:
            stable &= (o == base)
        return {"base": base, "stable": stable}

    dev = np.zeros(base.shape)
    kb = value_kind(base)
    with np.errstate(all="ignore"):
        for o in others:
            stable &= value_kind(o) == kb
            dev = np.maximum(dev, np.where(kb == 0, np.abs(o - base), 0))
        allow = np.maximum(TOLERANCE[dt] * np.maximum(1, np.abs(base)),
                           2 * dev)
    return {"base": base, "stable": stable, "allow": allow}


def value_kind(v):
    """0 for a finite float, 2 for NaN, +-3 for +-inf (element-wise)."""
    return np.where(np.isnan(v), 2, np.where(np.isinf(v), 3 * np.sign(v), 0))


def check_output(got_arr, exp, dt):
    """None if kina-run's output array `got_arr` (NPY storage) matches the
    expectation `exp` (expectation()), else why not."""
    base, stable = exp["base"], exp["stable"]
    if got_arr.dtype.str != NPY[dt] and not (
            dt == "i1" and got_arr.dtype == np.bool_):
        return f"dtype {got_arr.dtype.str}, expected {NPY[dt]}"
    if got_arr.shape != base.shape:
        return f"shape {got_arr.shape}, expected {base.shape}"
    got = from_storage(got_arr, dt)
    if not is_float(dt):
        bad = stable & (got != base)
    else:
        kb = value_kind(base)
        fin = kb == 0
        with np.errstate(all="ignore"):
            err = np.where(fin, np.abs(got - base), 0)
            bad = stable & ((value_kind(got) != kb) |
                            (fin & (err > exp["allow"])))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        return (f"{int(bad.sum())} of {bad.size} elements differ, first at "
                f"{list(i)}: got {got[i]!r}, expected {base[i]!r}")
    return None


def compare(got_arr, refs, dt):
    """None if kina-run's output matches the reference modes, else why not
    (kref.py's module comment)."""
    return check_output(got_arr, expectation(refs, dt), dt)


# ------------------------------------------------------------ one program

class Outcome:
    def __init__(self, cls, detail, log=""):
        self.cls, self.detail, self.log = cls, detail, log

    def signature(self):
        return (self.cls, normalize(self.detail)
                if self.cls in ("compile_error", "compile_crash",
                                "link_error", "run_status") else "")


def normalize(msg):
    m = re.search(r"error: (.*)", msg)
    s = m.group(1) if m else msg.strip().split("\n")[0]
    s = re.sub(r"[\w./-]*\.kir:\d+:\d+: ", "", s)
    s = re.sub(r"%[\w.]+", "%v", s)
    s = re.sub(r"@[\w.]+", "@f", s)
    s = re.sub(r"\b(f64|f32|f16|bf16|i64|i32|i8|i1)\[[^\]]*\]", "T", s)
    s = re.sub(r"\d+", "0", s)
    return s[:120]


def classify_compile(rc, err):
    if rc == "timeout":
        return Outcome("timeout", err, err)
    if rc < 0 or rc not in (0, 1) or "internal error" in err or \
            "Assertion" in err or "Stack dump" in err:
        return Outcome("compile_crash", f"kinac exit {rc}: " +
                       first_error(err), err)
    if re.search(r"undefined (reference|symbol)|\bld\b|link", err):
        return Outcome("link_error", first_error(err), err)
    return Outcome("compile_error", first_error(err), err)


def first_error(err):
    for line in err.splitlines():
        if "error" in line:
            return line.strip()[:300]
    return err.strip()[:300]


NO_DRIVER = "CUDA driver not found"


def run_library(kina_run, lib, fname, inputs, out_dtypes, exps, work,
                no_gpu_ok=False, gpu=False):
    """Runs `fname` of the shared library `lib` with kina-run on `inputs`
    ([NPY storage arrays], the parameters in order) and checks its outputs
    (element types `out_dtypes`) against `exps` ([expectation()]). Returns
    None when they match, "not run" when `no_gpu_ok` and kina-run stopped
    with status 3 because this machine has no CUDA driver (a cuda library
    checked as far as it can be without a GPU: loaded, its function found,
    its arguments validated), else an Outcome. `gpu`: a cuda library."""
    cmd = [kina_run, lib, fname]
    for k, arr in enumerate(inputs):
        p = os.path.join(work, f"{fname}.in{k}.npy")
        np.save(p, arr, allow_pickle=False)
        cmd += ["--in", p]
    outs = [os.path.join(work, f"{fname}.out{k}.npy")
            for k in range(len(out_dtypes))]
    for o in outs:
        if os.path.exists(o):
            os.remove(o)
        cmd += ["--out", o]
    rc, err = run(cmd, 60, gpu)
    if rc == "timeout":
        return Outcome("timeout", err, err)
    if rc < 0:
        return Outcome("run_crash", f"kina-run died by signal {-rc}", err)
    if no_gpu_ok and rc == 3 and NO_DRIVER in err:
        return "not run"
    if rc != 0:
        return Outcome("run_status", f"status {rc}: {err.strip()[:300]}",
                       err)
    probs = []
    got_arrays = []
    for k, (o, dt) in enumerate(zip(outs, out_dtypes)):
        got = np.load(o, allow_pickle=False)
        got_arrays.append(got)
        p = check_output(got, exps[k], dt)
        if p:
            probs.append(f"result {k}: {p}")
    if probs:
        o = Outcome("wrong_result", "; ".join(probs))
        o.got = got_arrays
        return o
    return None


class Tools:
    """kinac and kina-run, and how to use them: `target` is kinac's
    --target (cpu or cuda); with `no_gpu_ok`, a cuda library that kina-run
    cannot run for want of a CUDA driver counts as checked (compile-only,
    run_library()), and `not_run` counts them."""

    def __init__(self, kinac, kina_run, target="cpu", no_gpu_ok=False):
        self.kinac, self.kina_run = kinac, kina_run
        self.target, self.no_gpu_ok = target, no_gpu_ok
        self.not_run = 0

    def kinac_cmd(self, kir, out):
        cmd = [self.kinac, kir, "--emit=shared", "-o", out]
        if self.target != "cpu":
            cmd.append(f"--target={self.target}")
        return cmd

    def compile(self, text, work, stem):
        kir = os.path.join(work, stem + ".kir")
        lib = os.path.join(work, stem + ".so")
        with open(kir, "w") as f:
            f.write(text)
        if os.path.exists(lib):
            os.remove(lib)
        rc, err = run(self.kinac_cmd(kir, lib))
        return rc, err, lib

    def run_program(self, prog, lib, fname, refs, work):
        """Outcome of running main as `fname` from `lib`, or None if it
        matches the reference."""
        f = prog.main_func()
        inputs = [to_storage(prog.inputs[pn], dt) for pn, dt, _ in f.params]
        dts = [dt for dt, _ in f.ret_types]
        exps = [expectation({m: v[k] for m, v in refs.items()}, dt)
                for k, dt in enumerate(dts)]
        o = run_library(self.kina_run, lib, fname, inputs, dts, exps, work,
                        self.no_gpu_ok, self.target == "cuda")
        if o == "not run":
            self.not_run += 1
            return None
        return o

    def check(self, prog, work, refs=None):
        """Outcome of one program compiled alone (None: it passed)."""
        if refs is None:
            refs = kref.evaluate(prog)
        rc, err, lib = self.compile(kgen.print_program(prog), work, "p")
        if rc != 0:
            return classify_compile(rc, err)
        return self.run_program(prog, lib, prog.main, refs, work)


def rename_program(prog, prefix):
    """A copy of prog whose functions are prefixed (for batching)."""
    obj = kgen.program_to_json(prog)
    mapping = {f["name"]: prefix + f["name"] for f in obj["funcs"]}
    for f in obj["funcs"]:
        f["name"] = mapping[f["name"]]
        for s in f["stmts"]:
            if s["callee"]:
                s["callee"] = mapping[s["callee"]]
    obj["main"] = mapping[obj["main"]]
    return kgen.program_from_json(obj, prog.inputs)


def run_batch(tools, progs, work):
    """{seed: Outcome or None} of the programs `progs` ({seed: (prog,
    refs)}), compiled as one module; a module that does not compile is
    split in halves until each failure belongs to one program."""
    results = {}
    seeds = list(progs)
    text = "\n".join(kgen.print_program(progs[s][0]) for s in seeds)
    if len(seeds) == 1:
        p, refs = progs[seeds[0]]
        return {seeds[0]: tools.check(p, work, refs)}
    rc, err, lib = tools.compile(text, work, "batch")
    if rc != 0:
        half = len(seeds) // 2
        for part in (seeds[:half], seeds[half:]):
            results.update(run_batch(tools, {s: progs[s] for s in part},
                                     work))
        return results
    for s in seeds:
        p, refs = progs[s]
        o = tools.run_program(p, lib, p.main, refs, work)
        if o is not None and o.cls != "wrong_result":
            o2 = tools.check(p, work, refs)  # confirm alone
            o = o2 if o2 is not None else o
        results[s] = o
    return results


# --------------------------------------------------------------- mutation

def mutate(prog, rng):
    """(text, line, what) of an invalid variant of prog whose first error
    belongs to `line`, or None."""
    f = prog.main_func()
    infos = kgen.check_program(prog)
    lines = {}
    text_funcs = [kgen.print_func(prog.funcs[n]) for n in kgen.func_order(
        prog)[:-1]]
    first = sum(t.count("\n") + 2 for t in text_funcs) + 1
    cands = [i for i, s in enumerate(f.stmts)]
    if not cands:
        return None
    i = cands[int(rng.integers(len(cands)))]
    s = f.stmts[i]
    m = Stmt(s.res, s.op, list(s.args), dict(s.attrs), s.annot, s.callee)
    vals = [a for a in m.args if isinstance(a, str)]
    kinds = []
    if vals:
        kinds += ["undefined", "later"]
    if s.op not in ("constant", "iota", "call"):
        kinds += ["annot_dt", "unknown_attr"]
    if s.op != "iota" and ("axis" in s.attrs or s.op in ("softmax", "log_softmax", "argmax",
                                     "argmin", "concat", "gather")):
        kinds.append("axis")  # (iota's rank is its annotation's)
    if s.op == "slice":
        kinds.append("step0")
    if (s.op in kgen.BINARY or s.op in kgen.COMPARE) and len(vals) == 2 \
            and vals[0] != vals[1]:
        kinds.append("mixed")  # the other %value keeps the element type
    if s.op == "cast":
        kinds.append("cast_to")
    if s.op in ("reduce_mean", "softmax", "exp", "log", "tanh", "sin") :
        kinds.append("int_operand")
    if not kinds:
        return None
    kind = kinds[int(rng.integers(len(kinds)))]
    extra = None
    if kind == "undefined":
        k = m.args.index(vals[0])
        m.args[k] = "undefined_value"
    elif kind == "later":
        k = m.args.index(vals[0])
        later = [r for t in f.stmts[i:] for r in t.res]
        m.args[k] = later[-1]
    elif kind == "annot_dt":
        dt0 = infos[s.res[0]].dt
        other = [d for d in kgen.DTYPES if d != dt0]
        m.annot = [(other[int(rng.integers(len(other)))],
                    tuple(infos[r].dims)) for r in s.res]
    elif kind == "unknown_attr":
        m.attrs["bogus_attr"] = 1
    elif kind == "axis":
        r = len(infos[vals[0]].dims) if vals else 1
        m.attrs["axis"] = r if rng.random() < 0.5 else -r - 1
    elif kind == "step0":
        step = list(m.attrs.get("step", [1] * len(m.attrs["start"])))
        step[int(rng.integers(len(step)))] = 0
        m.attrs["step"] = step
    elif kind == "mixed":
        dt0 = infos[vals[0]].dt
        pn = "mutant_param"
        dt1 = [d for d in kgen.DTYPES if d != dt0][int(rng.integers(7))]
        m.args[m.args.index(vals[0])] = pn
        extra = (pn, dt1, tuple(infos[vals[0]].dims))
    elif kind == "cast_to":
        m.attrs["to"] = DT("f33")
    elif kind == "int_operand":
        pn = "mutant_param"
        m.args = [pn]
        extra = (pn, "i32", tuple(infos[vals[0]].dims))
    g = kgen.Func(f.name, f.private)
    g.params = list(f.params) + ([extra] if extra else [])
    g.stmts = list(f.stmts)
    g.stmts[i] = m
    g.rets, g.ret_types = f.rets, f.ret_types
    # Dims of an added parameter must be known names or sizes.
    body = kgen.print_func(g, lines=lines, first_line=first)
    text = "\n\n".join(text_funcs + [body]) + "\n"
    return text, lines[i], kind


def check_mutant(tools, text, line, kind, work, idx):
    kir = os.path.join(work, f"mutant{idx}.kir")
    with open(kir, "w") as f:
        f.write(text)
    out = os.path.join(work, f"mutant{idx}.so")
    marker = b"existing output\n"
    keep = idx % 2 == 0
    if keep:
        with open(out, "wb") as f:
            f.write(marker)
    elif os.path.exists(out):
        os.remove(out)
    rc, err = run(tools.kinac_cmd(kir, out))
    probs = []
    if rc == "timeout" or rc != 1:
        probs.append(f"kinac exited {rc}, expected 1")
    if "internal error" in err:
        probs.append("internal error")
    locs = [int(x) for x in re.findall(
        re.escape(os.path.basename(kir)) + r":(\d+):\d+: error: ", err)]
    if not locs:
        probs.append("no located FILE:LINE:COL: error:")
    elif line not in locs and kind not in ("later",):
        probs.append(f"error lines {locs}, expected {line}")
    if keep:
        with open(out, "rb") as f:
            if f.read() != marker:
                probs.append("the existing output was changed")
    elif os.path.exists(out):
        probs.append("an output was written")
    if probs:
        return Outcome("bad_diagnostic", f"{kind}: " + "; ".join(probs),
                       err)
    return None


# ---------------------------------------------------------------- reducer

def count_size(prog):
    return sum(len(f.stmts) for f in prog.funcs.values())


def clean(prog):
    """Drop dead statements, unused parameters and unused helpers."""
    f = prog.main_func()
    changed = True
    while changed:
        changed = False
        live = set(f.rets)
        keep = []
        for s in reversed(f.stmts):
            if any(r in live for r in s.res):
                keep.append(s)
                live.update(a for a in s.args if isinstance(a, str))
            else:
                changed = True
        f.stmts = keep[::-1]
    used = set(f.rets) | {a for s in f.stmts for a in s.args
                          if isinstance(a, str)}
    f.params = [p for p in f.params if p[0] in used]
    prog.inputs = {p[0]: prog.inputs[p[0]] for p in f.params}
    callees = {s.callee for s in f.stmts if s.op == "call"}
    for n in list(prog.funcs):
        if n != prog.main and n not in callees:
            del prog.funcs[n]
    return prog


def copy_prog(prog):
    return kgen.program_from_json(kgen.program_to_json(prog),
                                  dict(prog.inputs))


def candidates(prog, base_vals, infos):
    """Smaller variants of prog, most promising first."""
    f = prog.main_func()
    defs = {r: s for s in f.stmts for r in s.res}
    # Return an operand of a result's statement instead of the result.
    for k, r in enumerate(f.rets):
        s = defs.get(r)
        if s is None:
            continue
        for a in s.args:
            if not isinstance(a, str):
                continue
            p = copy_prog(prog)
            g = p.main_func()
            if a in g.rets:
                if len(g.rets) == 1:
                    continue
                del g.rets[k]
                del g.ret_types[k]
            else:
                g.rets[k] = a
                g.ret_types[k] = (infos[a].dt,
                                  tuple("?" for _ in infos[a].dims))
            yield clean(p)
    # Drop a result.
    for k in range(len(f.rets)):
        if len(f.rets) > 1:
            p = copy_prog(prog)
            g = p.main_func()
            del g.rets[k]
            del g.ret_types[k]
            yield clean(p)
    # Delete a statement: its results become parameters holding their
    # reference values.
    for i in range(len(f.stmts) - 1, -1, -1):
        s = f.stmts[i]
        p = copy_prog(prog)
        g = p.main_func()
        del g.stmts[i]
        ok = True
        for r in s.res:
            if r not in base_vals:
                ok = False
                break
            inf = infos[r]
            dims = tuple(d if kgen.is_static(d) or any(
                d in pd for _, _, pd in g.params) else "?" for d in inf.dims)
            g.params.append((r, inf.dt, dims))
            p.inputs[r] = base_vals[r]
        if ok:
            yield clean(p)
    # Drop optional attributes, annotations.
    for i, s in enumerate(f.stmts):
        for k in list(s.attrs):
            if k in ("to", "shape", "start", "stop"):
                continue
            p = copy_prog(prog)
            del p.main_func().stmts[i].attrs[k]
            yield p
        if s.annot is not None and s.op not in ("constant", "iota"):
            p = copy_prog(prog)
            p.main_func().stmts[i].annot = None
            yield p
    # Simplify inputs.
    for pn, dt, _ in f.params:
        v = prog.inputs[pn]
        if v.size > 1 or (v.size == 1 and v.reshape(-1)[0] not in (0, 1)):
            p = copy_prog(prog)
            p.inputs[pn] = np.zeros_like(v) if dt != "i1" else \
                np.zeros(v.shape, bool)
            yield p


def base_values(prog):
    """Reference values of every value of main (base mode)."""
    f = prog.main_func()
    g = kgen.Func(f.name, f.private)
    g.params, g.stmts = f.params, f.stmts
    g.rets = [r for s in f.stmts for r in s.res]
    infos = kgen.check_program(prog)
    g.ret_types = [(infos[r].dt, tuple("?" for _ in infos[r].dims))
                   for r in g.rets]
    q = kgen.Program(f.name, dict(prog.funcs), prog.inputs)
    q.funcs[f.name] = g
    out = kref.eval_func(q, g, [np.asarray(prog.inputs[p]) for p, _, _ in
                                g.params], kref.Ctx("base", 0))
    return dict(zip(g.rets, out)), infos


def reduce_failure(tools, prog, outcome, work, budget):
    """The smallest variant of prog found within `budget` seconds that
    fails with the same signature."""
    sig = outcome.signature()
    best = copy_prog(prog)
    deadline = time.time() + budget
    progress = True
    while progress and time.time() < deadline:
        progress = False
        try:
            base_vals, infos = base_values(best)
        except (Invalid, kref.RefError):
            break
        for cand in candidates(best, base_vals, infos):
            if time.time() > deadline:
                break
            try:
                kgen.check_program(cand)
                refs = kref.evaluate(cand)
            except (Invalid, kref.RefError, KeyError, IndexError, ValueError):
                continue
            o = tools.check(cand, work, refs)
            if o is not None and o.signature() == sig:
                best, outcome = cand, o
                progress = True
                break
    return best, outcome


# ------------------------------------------------ build here, run there

def compile_batches(tools, progs, work, stem="lib"):
    """Compiles the programs `progs` ({seed: prog}) as one module; a module
    that does not compile is split in halves until each failure belongs to
    one program. Returns ([(seeds, library path)], {seed: Outcome})."""
    seeds = list(progs)
    text = "\n".join(kgen.print_program(progs[s]) for s in seeds)
    rc, err, lib = tools.compile(text, work, stem)
    if rc == 0:
        return [(seeds, lib)], {}
    if len(seeds) == 1:
        return [], {seeds[0]: classify_compile(rc, err)}
    libs, fails = [], {}
    half = len(seeds) // 2
    for k, part in enumerate((seeds[:half], seeds[half:])):
        l2, f2 = compile_batches(tools, {s: progs[s] for s in part}, work,
                                 f"{stem}{k}")
        libs += l2
        fails.update(f2)
    return libs, fails


def source_commit():
    """The commit of this tree (with "+changes" if tests/difftest differs
    from it), or "unknown" outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain",
                                "."], capture_output=True, text=True,
                               timeout=30)
        if head.returncode:
            return "unknown"
        return head.stdout.strip() + ("+changes" if dirty.stdout.strip()
                                      else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def reproduce_hint(seed, target):
    """How to reproduce and reduce the program of `seed` on the
    development machine (the GPU machine has no kinac)."""
    cmd = f"scripts/difftest.sh --seeds {seed}:{seed + 1}"
    if target == "cpu":
        return f"reproduce and reduce here (same commit): {cmd}"
    return (f"reproduce here (same commit): {cmd} --target={target} "
            f"(generates the same program, compiles it for {target} and "
            f"reduces what it sees fail: a compile failure anywhere, a "
            f"wrong result or status only where a GPU is); {cmd} checks "
            f"it on the CPU")


def build_only(args, tools, seeds):
    """--build-only OUT: generates the programs of `seeds`, compiles them
    (args.batch per library, -j at a time), and writes OUT/libs/*.so.xz
    (stripped, xz-compressed: each library carries a copy of the runtime
    and kernels compress well), OUT/cases/<seed>.kir (the program),
    OUT/cases/<seed>.npz (in<k>: the inputs as kina-run takes them;
    base<k>, stable<k>, allow<k>: expectation() of each result, base<k> as
    NPY storage) and OUT/index.json ({"target", "commit", "seeds",
    "programs": {seed: {"function", "lib" (null if it did not build),
    "params": [[name, dtype, dims]], "results": [dtype], "build_failure":
    {"class", "detail"} or absent}}}). Runs nothing. Returns the number of
    programs that did not build (recorded; they fail in --prebuilt)."""
    import concurrent.futures
    import lzma
    commit = source_commit()  # the generator's, before the long compile
    out = os.path.abspath(args.build_only)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "libs"))
    os.makedirs(os.path.join(out, "cases"))
    progs, index = {}, {}
    skipped = 0
    for s in seeds:
        try:
            p = kgen.generate(s, f"f{s % 10 ** 9}")
            refs = kref.evaluate(p)
        except (Invalid, kref.RefError):
            skipped += 1  # rare: a value-dependent rule; not a program
            continue
        progs[s] = p
        f = p.main_func()
        arrays = {}
        for k, (pn, dt, _) in enumerate(f.params):
            arrays[f"in{k}"] = to_storage(p.inputs[pn], dt)
        for k, (dt, _) in enumerate(f.ret_types):
            e = expectation({m: v[k] for m, v in refs.items()}, dt)
            arrays[f"base{k}"] = to_storage(e["base"], dt)
            arrays[f"stable{k}"] = e["stable"]
            if "allow" in e:
                arrays[f"allow{k}"] = e["allow"]
        np.savez_compressed(os.path.join(out, "cases", f"{s}.npz"), **arrays)
        with open(os.path.join(out, "cases", f"{s}.kir"), "w") as fh:
            fh.write(kgen.print_program(p))
        index[str(s)] = {
            "function": p.main, "lib": None,
            "params": [[pn, dt, [str(d) for d in dims]]
                       for pn, dt, dims in f.params],
            "results": [dt for dt, _ in f.ret_types]}
    seed_list = list(progs)
    groups = [seed_list[i:i + args.batch]
              for i in range(0, len(seed_list), args.batch)]
    work = os.path.abspath(args.workdir)

    def build(g):
        d = os.path.join(work, f"build{g[0]}")
        os.makedirs(d, exist_ok=True)
        return compile_batches(tools, {s: progs[s] for s in g}, d)

    nlib = 0
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for libs, fails in pool.map(build, groups):
            for members, lib in libs:
                subprocess.run(["strip", "--strip-unneeded", lib],
                               check=False)
                name = f"libs/lib{nlib}.so.xz"
                nlib += 1
                with open(lib, "rb") as src, \
                        lzma.open(os.path.join(out, name), "wb") as dst:
                    shutil.copyfileobj(src, dst)
                for s in members:
                    index[str(s)]["lib"] = name
            for s, o in fails.items():
                failed += 1
                index[str(s)]["build_failure"] = {"class": o.cls,
                                                  "detail": o.detail}
                print(f"FAIL seed {s}: {o.cls}: {o.detail[:300]}\n  "
                      f"{reproduce_hint(s, tools.target)}")
    with open(os.path.join(out, "index.json"), "w") as fh:
        json.dump({"target": tools.target, "commit": commit,
                   "seeds": f"{seeds.start}:{seeds.stop}",
                   "programs": index}, fh, indent=1)
    size = sum(os.path.getsize(os.path.join(dp, f))
               for dp, _, fs in os.walk(out) for f in fs)
    print(f"built {len(progs) - failed} of {len(progs)} programs for "
          f"--target={tools.target} into {nlib} libraries ({skipped} seeds "
          f"gave no program), {size / 2 ** 20:.1f} MiB in {out}")
    return failed


def show(arr):
    """A short text of an array of values (from_storage's)."""
    return np.array2string(np.asarray(arr), threshold=32, edgeitems=4,
                           max_line_width=100).replace("\n", "\n      ")


def prebuilt_one(args, index, seed, entry, lib_path):
    """(passed, report) of one program of --prebuilt."""
    target = index["target"]
    head = f"seed {seed} (@{entry['function']}"
    if entry.get("build_failure"):
        bf = entry["build_failure"]
        return False, (f"FAIL {head}, not built): {bf['class']}: "
                       f"{bf['detail'][:300]}\n  "
                       f"{reproduce_hint(seed, target)}")
    head += f" in {entry['lib']})"
    with np.load(os.path.join(args.prebuilt, "cases", f"{seed}.npz"),
                 allow_pickle=False) as z:
        data = dict(z)
    params = entry["params"]
    inputs = [data[f"in{k}"] for k in range(len(params))]
    dts = entry["results"]
    exps = []
    for k, dt in enumerate(dts):
        e = {"base": from_storage(data[f"base{k}"], dt),
             "stable": data[f"stable{k}"]}
        if f"allow{k}" in data:
            e["allow"] = data[f"allow{k}"]
        exps.append(e)
    work = os.path.join(args.workdir, f"run{seed}")
    os.makedirs(work, exist_ok=True)
    o = run_library(args.kina_run, lib_path(entry["lib"]),
                    entry["function"], inputs, dts, exps, work,
                    gpu=target == "cuda")
    if o is None:
        shutil.rmtree(work, ignore_errors=True)
        return True, f"PASS {head}"
    with open(os.path.join(args.prebuilt, "cases", f"{seed}.kir")) as fh:
        text = fh.read()
    lines = [f"FAIL {head}: {o.cls}: {o.detail[:600]}", "  program:"]
    lines += ["    " + t for t in text.rstrip().split("\n")]
    for k, (pn, dt, dims) in enumerate(params):
        lines.append(f"  input {k} %{pn}: {dt}[{', '.join(dims)}] = "
                     f"{show(from_storage(inputs[k], dt))}")
    for k, dt in enumerate(dts):
        lines.append(f"  result {k} {dt}: expected "
                     f"{show(exps[k]['base'])}")
        got = getattr(o, "got", None)
        if got is not None:
            lines.append(f"  result {k} {dt}: got      "
                         f"{show(from_storage(got[k], dt))}")
    if o.log and o.cls != "wrong_result":
        lines.append("  kina-run said: " + o.log.strip()[:400])
    lines.append("  " + reproduce_hint(seed, target))
    return False, "\n".join(lines)


def prebuilt(args):
    """--prebuilt OUT: runs every program of OUT/index.json (--build-only's)
    with kina-run, no kinac, compares with the recorded expectations and
    prints each failure with its program, seed, inputs and expected vs got
    results, then `N passed, N failed`. Returns True if all passed."""
    import concurrent.futures
    import lzma
    import threading
    args.prebuilt = os.path.abspath(args.prebuilt)
    with open(os.path.join(args.prebuilt, "index.json")) as fh:
        index = json.load(fh)
    print(f"difftest: prebuilt programs for --target={index['target']} "
          f"(seeds {index['seeds']}, commit {index['commit']}) from "
          f"{args.prebuilt}", flush=True)
    progs = index["programs"]
    seeds = sorted(int(s) for s in progs)
    if args.seeds:
        a, b = (int(x) for x in args.seeds.split(":"))
        seeds = [s for s in seeds if a <= s < b]
    lock = threading.Lock()
    libs = {}

    def lib_path(name):
        # Each library is decompressed once, into the work folder.
        with lock:
            if name not in libs:
                dst = os.path.join(args.workdir, name[:-len(".xz")])
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with lzma.open(os.path.join(args.prebuilt, name)) as src, \
                        open(dst, "wb") as fh:
                    shutil.copyfileobj(src, fh)
                libs[name] = dst
            return libs[name]

    passed = failed = 0
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = [pool.submit(prebuilt_one, args, index, s, progs[str(s)],
                            lib_path) for s in seeds]
        for fut in futs:
            ok, report = fut.result()
            if ok:
                passed += 1
                if args.v:
                    print(report)
            else:
                failed += 1
                print(report, flush=True)
    print(f"({len(seeds)} programs run with {args.kina_run} in "
          f"{time.time() - t0:.0f} s)")
    print(f"{passed} passed, {failed} failed")
    return failed == 0


# ----------------------------------------------------------------- output

def write_case(folder, prog, outcome, refs, original=None, xfail=None):
    """A self-contained failure/regression folder."""
    os.makedirs(folder, exist_ok=True)
    f = prog.main_func()
    with open(os.path.join(folder, "case.kir"), "w") as fh:
        fh.write(kgen.print_program(prog))
    with open(os.path.join(folder, "program.json"), "w") as fh:
        fh.write(kgen.dumps(prog))
    ins = []
    for k, (pn, dt, _) in enumerate(f.params):
        name = f"in{k}.npy"
        np.save(os.path.join(folder, name), to_storage(prog.inputs[pn], dt),
                allow_pickle=False)
        ins.append({"file": name, "param": pn, "dtype": dt})
    outs = []
    for k, (dt, _) in enumerate(f.ret_types):
        name = f"out{k}.npy"
        np.save(os.path.join(folder, name), to_storage(refs["base"][k], dt),
                allow_pickle=False)
        outs.append({"file": name, "dtype": dt})
    meta = {"function": prog.main, "inputs": ins, "outputs": outs,
            "class": outcome.cls, "detail": outcome.detail}
    if xfail:
        meta["xfail"] = xfail
    with open(os.path.join(folder, "case.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    if original is not None:
        with open(os.path.join(folder, "original.kir"), "w") as fh:
            fh.write(kgen.print_program(original))
    if outcome.log:
        with open(os.path.join(folder, "log.txt"), "w") as fh:
            fh.write(outcome.log)


def load_case(folder):
    with open(os.path.join(folder, "case.json")) as fh:
        meta = json.load(fh)
    inputs = {}
    for i in meta["inputs"]:
        arr = np.load(os.path.join(folder, i["file"]), allow_pickle=False)
        inputs[i["param"]] = from_storage(arr, i["dtype"])
    with open(os.path.join(folder, "program.json")) as fh:
        prog = kgen.program_from_json(json.load(fh), inputs)
    return prog, meta


def replay(tools, folders, work):
    passed = failed = 0
    for folder in folders:
        name = os.path.basename(folder.rstrip("/"))
        prog, meta = load_case(folder)
        problem = None
        with open(os.path.join(folder, "case.kir")) as fh:
            if fh.read() != kgen.print_program(prog):
                problem = "case.kir is not program.json printed"
        if problem is None:
            refs = kref.evaluate(prog)
            for k, o in enumerate(meta["outputs"]):
                want = np.load(os.path.join(folder, o["file"]))
                if not np.array_equal(from_storage(want, o["dtype"]),
                                      refs["base"][k], equal_nan=True):
                    problem = f"out{k}.npy is not the reference's output"
        if problem is None:
            d = os.path.join(work, name)
            os.makedirs(d, exist_ok=True)
            o = tools.check(prog, d, refs)
            if meta.get("xfail"):
                if o is None:
                    problem = ("passes now: remove its \"xfail\" marker "
                               f"({meta['xfail']})")
                elif o.cls != meta["class"]:
                    problem = (f"expected to fail with {meta['class']}, "
                               f"failed with {o.cls}: {o.detail}")
                else:
                    print(f"XFAIL {name}: {o.cls}: {o.detail[:160]}")
            elif o is not None:
                problem = f"{o.cls}: {o.detail}"
        if problem:
            failed += 1
            print(f"FAIL {name}: {problem}")
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return failed == 0


# ------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinac")
    ap.add_argument("--kina-run")
    ap.add_argument("--target", default="cpu", choices=("cpu", "cuda"),
                    help="kinac's --target")
    ap.add_argument("--compile-only", action="store_true",
                    help="cuda without a GPU: a library that kina-run "
                    "stops with status 3 for want of a CUDA driver counts "
                    "as checked (not run)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--build-only", metavar="OUT",
                      help="compile the programs of --seeds into OUT (for "
                      "--prebuilt on a GPU machine without kinac); run "
                      "nothing")
    mode.add_argument("--prebuilt", metavar="OUT",
                      help="run --build-only's programs from OUT with "
                      "kina-run (no kinac; --seeds picks some)")
    ap.add_argument("-j", "--jobs", type=int, default=2,
                    help="programs (--prebuilt) or libraries "
                    "(--build-only) at a time")
    ap.add_argument("--seeds", help="A:B, the seeds A..B-1")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--out", default="difftest-out")
    ap.add_argument("--workdir")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--mutants", type=int, default=2,
                    help="mutants per batch")
    ap.add_argument("--reduce-seconds", type=float, default=120)
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--known", action="store_true",
                    help="report the known bugs of known.py as XFAIL")
    ap.add_argument("--replay", nargs="+")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    if not args.prebuilt and not args.kinac:
        ap.error("--kinac is required (except with --prebuilt)")
    if not args.build_only and not args.kina_run:
        ap.error("--kina-run is required (except with --build-only)")
    if (args.build_only or args.prebuilt) and args.seconds:
        ap.error("--build-only and --prebuilt take --seeds, not --seconds")
    if args.build_only and not args.seeds:
        ap.error("--build-only needs --seeds A:B")
    tools = Tools(args.kinac, args.kina_run, args.target, args.compile_only)
    own_work = not args.workdir  # a temporary folder, removed at the end
    work = args.workdir or tempfile.mkdtemp(prefix="kina-difftest-")
    os.makedirs(work, exist_ok=True)
    args.workdir = work
    if args.build_only or args.prebuilt:
        if args.build_only:
            a, b = (int(x) for x in args.seeds.split(":"))
            ok = build_only(args, tools, range(a, b)) == 0
        else:
            ok = prebuilt(args)
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
        sys.exit(0 if ok else 1)
    if args.replay:
        folders = []
        for r in args.replay:
            if os.path.exists(os.path.join(r, "case.json")):
                folders.append(r)
            else:
                folders += sorted(os.path.join(r, d) for d in os.listdir(r)
                                  if os.path.isdir(os.path.join(r, d)))
        ok = replay(tools, folders, work)
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
        sys.exit(0 if ok else 1)
    if args.seeds:
        a, b = (int(x) for x in args.seeds.split(":"))
        seeds = iter(range(a, b))
        deadline = None
    else:
        start = int(time.time()) * 1000
        seeds = iter(range(start, start + 10 ** 9))
        deadline = time.time() + (args.seconds or 60)
    passed = failed = mpassed = mfailed = xfailed = not_run = 0
    failures = []
    seen = set()
    t0 = time.time()
    done = False
    while not done:
        batch = []
        for _ in range(args.batch):
            if deadline and time.time() > deadline:
                break
            s = next(seeds, None)
            if s is None:
                break
            batch.append(s)
        if len(batch) < args.batch:
            done = True
        if not batch:
            break
        progs = {}
        for s in batch:
            try:
                p = kgen.generate(s, f"f{s % 10 ** 9}")
                refs = kref.evaluate(p)
                progs[s] = (p, refs)
            except (Invalid, kref.RefError):
                continue  # rare: a value-dependent rule; not a program
        if not progs:
            continue
        bwork = os.path.join(work, "batch")
        os.makedirs(bwork, exist_ok=True)
        nr0 = tools.not_run
        results = run_batch(tools, progs, bwork)
        not_run += tools.not_run - nr0
        rng = np.random.default_rng(batch[0])
        for j, s in enumerate(list(progs)[:args.mutants]):
            try:
                mt = mutate(progs[s][0], rng)
            except Invalid:
                mt = None
            if mt is None:
                continue
            o = check_mutant(tools, *mt, bwork, j)
            if o is None:
                mpassed += 1
            else:
                mfailed += 1
                folder = os.path.join(args.out, f"bad_diagnostic-{s}")
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, "mutant.kir"), "w") as fh:
                    fh.write(mt[0])
                with open(os.path.join(folder, "log.txt"), "w") as fh:
                    fh.write(f"{o.detail}\n{o.log}")
                failures.append((folder, o, mt[0], None))
                print(f"FAIL mutant of seed {s}: {o.detail}")
        for s, o in results.items():
            if o is None:
                passed += 1
                continue
            p, refs = progs[s]
            sink = {}
            try:
                kgen.check_program(p, sink)
            except Invalid:
                pass
            kn = known.match(p, sink, o) if args.known else None
            if kn:
                xfailed += 1
                print(f"XFAIL seed {s}: known bug {kn}: {o.cls}")
            else:
                failed += 1
            sig = o.signature()
            red = p
            # Known bugs have reduced cases in regressions/ already.
            if not args.no_reduce and not kn and sig not in seen:
                seen.add(sig)
                rwork = os.path.join(work, "reduce")
                os.makedirs(rwork, exist_ok=True)
                red, o = reduce_failure(tools, p, o, rwork,
                                        args.reduce_seconds)
            try:
                rrefs = kref.evaluate(red)
            except (Invalid, kref.RefError):
                rrefs = refs
                red = p
            folder = os.path.join(args.out, f"{o.cls}-{s}")
            write_case(folder, red, o, rrefs, original=p)
            failures.append((folder, o, kgen.print_program(red), kn))
            if not kn:
                print(f"FAIL seed {s}: {o.cls}: {o.detail[:300]}")
        if args.v:
            print(f"[{time.time() - t0:.0f} s] {passed} passed, "
                  f"{failed} failed", flush=True)
    print(f"programs: {passed} passed, {failed} failed, {xfailed} known "
          f"bugs; mutants: {mpassed} passed, {mfailed} failed "
          f"({time.time() - t0:.0f} s)")
    if not_run:
        print(f"--target={args.target} without a GPU: {not_run} of the "
              f"{passed} passed programs were compiled and loaded by "
              f"kina-run but not run (status 3, {NO_DRIVER}); run "
              f"--build-only/--prebuilt on a GPU machine "
              f"(docs/gpu-check.md)")
    by = {}
    for folder, o, text, kn in failures:
        by.setdefault((kn,) + o.signature(), []).append((folder, o, text))
    for sig, items in by.items():
        folder, o, text = min(items, key=lambda t: len(t[2]))
        what = f"known bug {sig[0]}: " if sig[0] else ""
        print(f"\n== {what}{sig[1]} x{len(items)}: {o.detail[:300]}\n"
              f"   (smallest: {folder})\n{text}")
    print(f"{passed + mpassed} passed, {failed + mfailed} failed")
    if own_work:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed + mfailed else 0)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
