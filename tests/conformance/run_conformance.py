#!/usr/bin/python3
"""Runs the Kina IR conformance cases (tests/conformance/cases/).

For every case folder (written by generate.py: case.kir, in<k>.npy,
out<k>.npy, case.json) it compiles the function with `kinac --emit=shared`,
calls it with `kina-run LIB FN --in ... --out ...` and checks the outcome
case.json expects:
 - outputs (status 0): each result must have the expected NPY dtype and
   shape; integers and i1 must be equal; floats are compared with the
   tolerance of their class (docs/tolerances.md):
   max |out - ref| / max(1, |ref|) <= tol, NaN exactly where the reference
   has NaN, infinities equal (sign included), -0.0 and 0.0 equal; the class
   `exact` asks for tol 0;
 - a run-time failure: kina-run's exit status (1, Validation Error, or 6,
   Type Error) and a message on its standard error containing the expected
   text; no output file;
 - a compile error: kinac exits 1, writes no library, and reports
   `case.kir:LINE:COL: error: ...` at the expected line with the expected
   text.
To keep the run short, the functions of the cases that share a `group` are
compiled together into one module (their case.kir files joined; the
functions are independent and differently named); if that module does not
compile, every case of the group is compiled on its own, so that a failure
is reported against its case. Compile-error cases always compile alone.
`--no-batch` compiles every case alone. Prints one line per failing case
(all lines with -v), then `N passed, N failed`, and exits 1 if any case
failed. Needs /usr/bin/python3 with NumPy only.

`--target=cuda` compiles with `kinac --target=cuda` (kina-run then copies
the inputs into CUDA managed memory); the tolerances stay the CPU's. For a
GPU machine without kinac, the work splits in two:
 - `--build-only OUT` (here): compiles every library into OUT/libs, checks
   the compile-error cases, copies the cases into OUT/cases and writes
   OUT/index.json (which library each case runs in, or why none was built,
   and the compile-error cases' results); runs nothing;
 - `--prebuilt OUT` (there): runs every case with kina-run from those
   libraries, no kinac, and reports as above (compile-error cases with the
   results recorded at build time).
`--cpu-levels=x86-64,x86-64-v3` runs every passing case again with
KINA_CPU_LEVEL set to each level (the versions a default cpu object
carries, docs/integration.md) and checks those results as the first.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kina_values import NPY, from_storage, is_float  # noqa: E402

# Tolerance classes: docs/tolerances.md gives the reasons.
TOLERANCE = {
    "f64": 1e-12,
    "f32": 1e-5,
    "f16": 1e-3,
    "bf16": 8e-3,
    "exact": 0.0,
}
TIMEOUT = 300  # seconds for one kinac or kina-run process


class Case:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "case.json")) as f:
            self.meta = json.load(f)
        self.name = self.meta["name"]
        self.fn = self.meta["function"]
        self.expect = self.meta["expect"]
        with open(os.path.join(folder, "case.kir")) as f:
            self.kir = f.read()

    @property
    def compile_error(self):
        return self.expect.get("compile_error", False)


def run(cmd, cwd=None, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        return p.returncode, p.stdout.decode(errors="replace"), \
            p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {TIMEOUT} s"


def compare(name, got_arr, want_arr, dtype, tol_class):
    """None if `got_arr` matches `want_arr`, else why not."""
    if got_arr.dtype.str != NPY[dtype] and not (
            NPY[dtype] == "|b1" and got_arr.dtype == np.bool_):
        return f"{name}: dtype {got_arr.dtype.str}, expected {NPY[dtype]}"
    if got_arr.shape != want_arr.shape:
        return f"{name}: shape {got_arr.shape}, expected {want_arr.shape}"
    got, want = from_storage(got_arr, dtype), from_storage(want_arr, dtype)
    if not is_float(dtype):
        bad = got != want
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return (f"{name}: {int(bad.sum())} of {bad.size} elements differ, "
                    f"first at {i}: got {got[i]}, expected {want[i]}")
        return None
    # A class name, or a number (cases exported by run_e2e.py carry their
    # own tolerances, compared the same way).
    tol = TOLERANCE[tol_class] if isinstance(tol_class, str) \
        else float(tol_class)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if (nan_got != nan_want).any():
        i = tuple(np.argwhere(nan_got != nan_want)[0])
        return f"{name}: NaN mismatch at {i}: got {got[i]}, expected {want[i]}"
    inf_want = np.isinf(want)
    bad_inf = (inf_want | np.isinf(got)) & (got != want)
    if bad_inf.any():
        i = tuple(np.argwhere(bad_inf)[0])
        return f"{name}: at {i}: got {got[i]}, expected {want[i]}"
    finite = ~nan_want & ~inf_want
    if finite.any():
        with np.errstate(all="ignore"):
            err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
        err = np.where(finite, err, 0.0)
        worst = float(err.max())
        if worst > tol:
            i = tuple(np.unravel_index(int(err.argmax()), err.shape))
            return (f"{name}: error {worst:.3g} > {tol:g} ({tol_class}) at "
                    f"{i}: got {got[i]!r}, expected {want[i]!r}")
    return None


class Runner:
    def __init__(self, args):
        self.args = args

    def kinac(self, kir_path, lib):
        cmd = [self.args.kinac, kir_path, "--emit=shared", "-o", lib]
        if self.args.target != "cpu":
            cmd.append(f"--target={self.args.target}")
        return run(cmd)

    def check_compile_error(self, case, work):
        kir = os.path.join(work, "case.kir")
        shutil.copyfile(os.path.join(case.folder, "case.kir"), kir)
        lib = os.path.join(work, "case.so")
        rc, out, err = self.kinac(kir, lib)
        if rc != 1:
            return f"kinac exited {rc}, expected 1 (a compile error)\n{err}"
        if os.path.exists(lib):
            return "kinac failed but wrote the library"
        line = case.expect["line"]
        m = re.search(r"case\.kir:(\d+):(\d+): error: (.*)", err)
        if not m:
            return f"no located 'case.kir:LINE:COL: error:' message:\n{err}"
        if int(m.group(1)) != line:
            return f"error reported at line {m.group(1)}, expected {line}:\n{err}"
        missing = [t for t in case.expect["message"] if t not in err]
        if missing:
            return f"the message does not contain {missing!r}:\n{err}"
        return None

    def check_run(self, case, lib, work):
        ins = [os.path.join(case.folder, i["file"]) for i in case.meta["inputs"]]
        outs_meta = case.meta["outputs"]
        status = case.expect.get("status", 0)
        # A call expected to fail still names one --out per result.
        n_results = case.meta["results"]
        outs = [os.path.join(work, f"got{k}.npy") for k in range(n_results)]
        for o in outs:
            if os.path.exists(o):
                os.remove(o)
        cmd = [self.args.kina_run, lib, case.fn, "--check-leaks"]
        for i in ins:
            cmd += ["--in", i]
        for o in outs:
            cmd += ["--out", o]
        rc, out, err = run(cmd)
        if status != 0:
            if rc != status:
                return (f"kina-run exited {rc}, expected {status}\n"
                        f"{err.strip()}")
            missing = [t for t in case.expect["message"] if t not in err]
            if missing:
                return (f"status {rc} but the message does not contain "
                        f"{missing!r}: {err.strip()}")
            if any(os.path.exists(o) for o in outs):
                return f"status {rc} but an output file was written"
            return None
        if rc != 0:
            return f"kina-run exited {rc}: {err.strip()}"
        problems = []
        for k, (o, m) in enumerate(zip(outs, outs_meta)):
            got = np.load(o, allow_pickle=False)
            want = np.load(os.path.join(case.folder, m["file"]),
                           allow_pickle=False)
            p = compare(f"result {k}", got, want, m["dtype"],
                        m["tolerance"])
            if p:
                problems.append(p)
        if not problems:
            problems += self.check_levels(case, cmd, outs, work)
        return "; ".join(problems) or None

    def check_levels(self, case, cmd, outs, work):
        """--cpu-levels: reruns kina-run's command `cmd` with
        KINA_CPU_LEVEL set to each level; each run's results must pass the
        same comparison with the expected outputs as the first run's
        (`outs`, the host's best version). Integer and exact results are
        therefore identical at every level; floats may differ in the last
        bits where a level fuses the multiply-adds LLVM may fuse
        (llvm.fmuladd, docs/integration.md). Returns the problems."""
        problems = []
        for level in self.args.cpu_levels:
            env = dict(os.environ, KINA_CPU_LEVEL=level)
            mine = [os.path.join(work, f"got{k}.{level}.npy")
                    for k in range(len(outs))]
            argv = list(cmd)
            for o, m in zip(outs, mine):
                argv[argv.index(o)] = m
            rc, _, err = run(argv, env=env)
            if rc != 0:
                problems.append(f"KINA_CPU_LEVEL={level}: kina-run exited "
                                f"{rc}: {err.strip()}")
                continue
            for k, (m, meta) in enumerate(zip(mine, case.meta["outputs"])):
                got = np.load(m, allow_pickle=False)
                want = np.load(os.path.join(case.folder, meta["file"]),
                               allow_pickle=False)
                p = compare(f"KINA_CPU_LEVEL={level}: result {k}", got, want,
                            meta["dtype"], meta["tolerance"])
                if p:
                    problems.append(p)
        return problems

    def build_group(self, group, cases):
        """Compiles one group: ([(case, problem)] of its compile-error
        cases, {case name: library path, or "kinac exited ..." text})."""
        results = []
        gwork = os.path.join(self.args.workdir, group)
        os.makedirs(gwork, exist_ok=True)
        solo = [c for c in cases if c.compile_error]
        batch = [c for c in cases if not c.compile_error]
        for c in solo:
            work = os.path.join(gwork, c.name)
            os.makedirs(work, exist_ok=True)
            results.append((c, self.check_compile_error(c, work)))
        libs = {}
        if batch and not self.args.no_batch:
            kir = os.path.join(gwork, f"{group}.kir")
            with open(kir, "w") as f:
                f.write(f"module @{group}\n\n" +
                        "\n".join(c.kir for c in batch))
            lib = os.path.join(gwork, f"{group}.so")
            rc, _, err = self.kinac(kir, lib)
            if rc == 0:
                libs = {c.name: lib for c in batch}
        for c in batch:
            if c.name in libs:
                continue
            work = os.path.join(gwork, c.name)
            os.makedirs(work, exist_ok=True)
            kir = os.path.join(work, "case.kir")
            shutil.copyfile(os.path.join(c.folder, "case.kir"), kir)
            lib = os.path.join(work, "case.so")
            rc, _, err = self.kinac(kir, lib)
            libs[c.name] = lib if rc == 0 else \
                f"kinac exited {rc}:\n{err.strip()}"
        return results, libs

    def run_cases(self, cases, libs, workdir):
        """[(case, problem)] of running every case with its library."""
        results = []
        for c in cases:
            lib = libs.get(c.name)
            if lib is None or not lib.endswith(".so"):
                results.append((c, lib or "no library was built"))
                continue
            work = os.path.join(workdir, c.name)
            os.makedirs(work, exist_ok=True)
            try:
                results.append((c, self.check_run(c, lib, work)))
            except Exception as e:  # a broken output file, ...
                results.append((c, f"{type(e).__name__}: {e}"))
        return results

    def run_group(self, group, cases):
        """Results [(case, problem or None)] of one group."""
        results, libs = self.build_group(group, cases)
        batch = [c for c in cases if not c.compile_error]
        return results + self.run_cases(
            batch, libs, os.path.join(self.args.workdir, group))


def build_only(args, runner, groups):
    """--build-only: libraries, compile-error results and the cases into
    args.build_only; returns the number of cases whose library did not
    build or whose compile error was wrong."""
    out = os.path.abspath(args.build_only)
    libdir = os.path.join(out, "libs")
    os.makedirs(libdir, exist_ok=True)
    index = {"target": args.target, "cases": {}}
    problems = 0
    order = sorted(groups, key=lambda g: -len(groups[g]))
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(runner.build_group, g, groups[g]): g
                   for g in order}
        for fut in concurrent.futures.as_completed(futures):
            results, libs = fut.result()
            for c, problem in results:
                index["cases"][c.name] = {"compile_error_problem": problem}
                if problem:
                    problems += 1
                    print(f"FAIL {c.name}: {problem}", flush=True)
            for name, lib in libs.items():
                if lib.endswith(".so"):
                    # One copy per library (a group's cases share one).
                    rel = os.path.relpath(lib, args.workdir)
                    dest = os.path.join(libdir, rel.replace(os.sep, "__"))
                    if not os.path.exists(dest):
                        shutil.copyfile(lib, dest)
                    index["cases"][name] = {
                        "lib": os.path.relpath(dest, out)}
                else:
                    problems += 1
                    index["cases"][name] = {"build_problem": lib}
                    print(f"FAIL {name}: {lib}", flush=True)
    cases_out = os.path.join(out, "cases")
    if os.path.isdir(cases_out):
        shutil.rmtree(cases_out)
    for name in index["cases"]:
        shutil.copytree(os.path.join(args.cases, name),
                        os.path.join(cases_out, name))
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
    print(f"built {sum(1 for v in index['cases'].values() if 'lib' in v)} "
          f"cases' libraries ({len(os.listdir(libdir))} files) for "
          f"--target={args.target} into {out}; {problems} problems")
    return problems


def prebuilt_group(runner, prebuilt, index, cases, group):
    """--prebuilt: [(case, problem)] of one group from the recorded index."""
    results = []
    libs = {}
    batch = []
    for c in cases:
        entry = index["cases"].get(c.name)
        if entry is None:
            results.append((c, "not in the prebuilt index"))
        elif "compile_error_problem" in entry:
            results.append((c, entry["compile_error_problem"]))
        elif "build_problem" in entry:
            results.append((c, entry["build_problem"]))
        else:
            libs[c.name] = os.path.join(prebuilt, entry["lib"])
            batch.append(c)
    return results + runner.run_cases(
        batch, libs, os.path.join(runner.args.workdir, group))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinac")
    ap.add_argument("--kina-run", dest="kina_run")
    ap.add_argument("--cases")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda"],
                    help="kinac --target (default cpu)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--build-only", metavar="OUT", dest="build_only",
                      help="compile the libraries into OUT (for "
                      "--prebuilt on another machine); run nothing")
    mode.add_argument("--prebuilt", metavar="OUT",
                      help="run the libraries --build-only wrote into OUT "
                      "(no kinac needed)")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1,
                    dest="jobs", help="groups run in parallel")
    ap.add_argument("--filter", default="",
                    help="only cases whose name contains this text")
    ap.add_argument("--no-batch", action="store_true",
                    help="compile every case on its own")
    ap.add_argument("--cpu-levels", default="", dest="cpu_levels",
                    help="comma-separated KINA_CPU_LEVEL values (x86-64, "
                    "x86-64-v3, ...): each case also runs at each, its "
                    "results checked as the default run's")
    ap.add_argument("-v", action="store_true", dest="verbose",
                    help="print every case")
    args = ap.parse_args()
    args.cpu_levels = [l for l in args.cpu_levels.split(",") if l]
    index = None
    if args.prebuilt:
        args.prebuilt = os.path.abspath(args.prebuilt)
        with open(os.path.join(args.prebuilt, "index.json")) as f:
            index = json.load(f)
        if args.cases is None:
            args.cases = os.path.join(args.prebuilt, "cases")
        print(f"prebuilt libraries for --target={index['target']} from "
              f"{args.prebuilt}", flush=True)
    if args.cases is None:
        args.cases = os.path.join(here, "cases")
    if not args.prebuilt and not args.kinac:
        ap.error("--kinac is required (except with --prebuilt)")
    if not args.build_only and not args.kina_run:
        ap.error("--kina-run is required (except with --build-only)")
    start = time.time()
    cases = []
    for name in sorted(os.listdir(args.cases)):
        folder = os.path.join(args.cases, name)
        if args.filter in name and os.path.isfile(
                os.path.join(folder, "case.json")):
            cases.append(Case(folder))
    if not cases:
        print("no cases found", file=sys.stderr)
        return 1
    if os.path.isdir(args.workdir):
        shutil.rmtree(args.workdir)
    os.makedirs(args.workdir)
    groups = {}
    for c in cases:
        groups.setdefault(c.meta["group"], []).append(c)
    runner = Runner(args)
    if args.build_only:
        return 1 if build_only(args, runner, groups) else 0
    results = []
    # Big groups first, so that the last ones to finish are short.
    order = sorted(groups, key=lambda g: -len(groups[g]))
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        if index is not None:
            futures = [pool.submit(prebuilt_group, runner, args.prebuilt,
                                   index, groups[g], g) for g in order]
        else:
            futures = [pool.submit(runner.run_group, g, groups[g])
                       for g in order]
        for fut in concurrent.futures.as_completed(futures):
            for c, problem in fut.result():
                results.append((c, problem))
                if problem:
                    print(f"FAIL {c.name}: {problem}", flush=True)
                elif args.verbose:
                    print(f"PASS {c.name}", flush=True)
    failed = sum(1 for _, p in results if p)
    print(f"{len(results) - failed} passed, {failed} failed "
          f"({time.time() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
