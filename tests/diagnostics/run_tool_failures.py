#!/usr/bin/env python3
"""Failures of the external tools kinac runs (mlir-translate, llc, cc).

kinac writes textual MLIR and calls `mlir-translate` and `llc` (and the C
compiler driver to link). When one of them is missing, crashes, is killed
or fails, kinac must say which tool, its exact command and its stderr, exit
with status 1, leave no output file (an existing one untouched) and remove
every temporary file; with `--keep-temps` it keeps them and says where.

Fake tools are small shell scripts written here: one that kills itself with
SIGSEGV, one with SIGKILL, one that exits 3 after writing a partial output
file, each printing a line on stderr first. Every run has TMPDIR pointing at
an empty directory, which must be empty again afterwards. kinac interrupted
(SIGINT, SIGTERM, sent to kinac alone) while a slow tool runs must kill the
tool, leave no temporary file and no output, and die of the signal.

Usage: run_tool_failures.py --kinac PATH --workdir DIR
"""
import argparse
import os
import shutil
import stat
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOOD = os.path.join(HERE, "..", "..", "samples", "digits", "mlp.kir")
SENTINEL = b"existing output, must survive\n"

FAKES = {
    # name: (script body, what kinac must say about the way it ended)
    "segv": ('echo "fake tool: about to crash" >&2\nkill -SEGV $$\n',
             "crashed or was killed"),
    "kill": ('echo "fake tool: about to be killed" >&2\nkill -KILL $$\n',
             "crashed or was killed"),
    "fail": ('echo "fake tool: cannot read the input" >&2\n'
             'for a in "$@"; do o=$a; done\n'
             '# write a partial output where -o points, then fail\n'
             'echo partial > "$o"\nexit 3\n',
             "failed with exit code 3"),
}


def make_fake(bindir, name, body):
    path = os.path.join(bindir, f"fake-{name}")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP |
             stat.S_IXOTH)
    return path


def run(kinac, args, cwd, tmpdir, env=None):
    e = dict(os.environ, TMPDIR=tmpdir, **(env or {}))
    p = subprocess.run([kinac] + args, capture_output=True, cwd=cwd, env=e,
                       timeout=300)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def check_clean(case_dir, tmpdir, out, existing, problems):
    if existing:
        with open(out, "rb") as f:
            if f.read() != SENTINEL:
                problems.append("existing output file was modified")
    elif os.path.exists(out):
        problems.append("an output file was written")
    beside = [f for f in os.listdir(case_dir) if f != os.path.basename(out)]
    if beside:
        problems.append(f"files left beside the output: {beside}")
    left = os.listdir(tmpdir)
    if left:
        problems.append(f"temporary files left in TMPDIR: {left}")


def tool_case(kinac, work, bindir, tool, fake, fake_name, how):
    """`tool` (mlir-translate or llc) replaced by `fake`."""
    problems = []
    case_dir = fresh(os.path.join(work, f"{tool}-{fake_name}"))
    tmpdir = fresh(os.path.join(work, f"{tool}-{fake_name}-tmp"))
    out = os.path.join(case_dir, "out.o")
    for existing in (False, True):
        if existing:
            with open(out, "wb") as f:
                f.write(SENTINEL)
        rc, err = run(kinac, [GOOD, f"--{tool}={fake}", "-o", out], case_dir,
                      tmpdir)
        if rc != 1:
            problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
        lines = err.splitlines()
        head = f"kinac: error: '{tool}' {how}"
        if not lines or not lines[0].startswith(head):
            problems.append(f"expected '{head}...' first, got:\n{err}")
        if not any(l.startswith(f"  command: {fake} ") for l in lines):
            problems.append(f"the command line is not shown:\n{err}")
        if "fake tool:" not in err:
            problems.append(f"the tool's stderr is not shown:\n{err}")
        check_clean(case_dir, tmpdir, out, existing, problems)
    return problems


def keep_temps_case(kinac, work, fake):
    """--keep-temps after a failing llc: the temporaries are kept, named."""
    problems = []
    case_dir = fresh(os.path.join(work, "keep-temps"))
    tmpdir = fresh(os.path.join(work, "keep-temps-tmp"))
    out = os.path.join(case_dir, "out.o")
    rc, err = run(kinac, [GOOD, f"--llc={fake}", "--keep-temps", "-o", out],
                  case_dir, tmpdir)
    if rc != 1:
        problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
    kept = [l[len("kinac: kept temporary file "):]
            for l in err.splitlines()
            if l.startswith("kinac: kept temporary file ")]
    # At the default -O2: the MLIR, mlir-translate's LLVM IR, the same two
    # of the x86-64-v4 version (kinac-v4-*, its own 512-bit pipeline), the
    # multiversioned LLVM IR (.mv.ll, no --mcpu: docs/integration.md),
    # opt's optimised LLVM IR (.opt.ll) and the object llc failed to write.
    exts = sorted(("v4" if os.path.basename(k).startswith("kinac-v4-")
                   else "") + k[k.index(".", len(os.path.dirname(k)) + 1):]
                  for k in kept)
    if exts != [".ll", ".mlir", ".mv.ll", ".o", ".opt.ll", "v4.ll",
                "v4.mlir"]:
        problems.append(f"expected the kept .mlir, .ll, .mv.ll, .opt.ll, "
                        f".o and the v4 .mlir and .ll files, got {kept}:\n{err}")
    for k in kept:
        if not os.path.isfile(k) or os.path.dirname(k) != tmpdir:
            problems.append(f"kept file {k} is not a file in TMPDIR")
    if os.path.exists(out):
        problems.append("an output file was written")
    listed = sorted(os.path.join(tmpdir, f) for f in os.listdir(tmpdir))
    if listed != sorted(kept):
        problems.append(f"TMPDIR holds {listed}, kinac named {kept}")
    shutil.rmtree(tmpdir, ignore_errors=True)
    return problems


def interrupt_case(kinac, work, bindir, sig, how="after-start", tag="",
                   late_s=1.0):
    """kinac gets `sig` while llc (a fake that sleeps, then writes its
    output) runs: the fake must not outlive kinac to write its output, and
    TMPDIR and the output directory must end empty.

    how: "after-start": the test sends the signal once the fake says it has
    started; "from-tool": the fake sends it to kinac as its first action,
    which lands right after kinac spawned it (the window where kinac may not
    yet know the tool's process id); "delay:S": the test sends it S seconds
    after starting kinac, wherever kinac is then."""
    problems = []
    name = signal.Signals(sig).name
    case = f"interrupt-{name}-{how.replace(':', '')}{tag}"
    case_dir = fresh(os.path.join(work, case))
    tmpdir = fresh(os.path.join(work, case + "-tmp"))
    started = os.path.join(case_dir, "started")
    signal_parent = f"kill -{name[3:]} $PPID\n" if how == "from-tool" else ""
    # "after-start": the sleep and the write run in a child of the fake,
    # which killing the fake alone leaves running. Otherwise the fake writes
    # itself: it survives (and writes) only if kinac does not know it runs.
    late = (f'(sleep {late_s}; echo late > "$o") &\nwait\n'
            if how == "after-start" else
            f'sleep {late_s}\necho late > "$o"\n')
    slow = make_fake(bindir, case,
                     f'for a in "$@"; do o=$a; done\n{signal_parent}'
                     f': > "{started}"\n{late}')
    out = os.path.join(case_dir, "out.o")
    p = subprocess.Popen([kinac, GOOD, f"--llc={slow}", "-o", out],
                         cwd=case_dir, env=dict(os.environ, TMPDIR=tmpdir),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if how.startswith("delay:"):
        time.sleep(float(how[len("delay:"):]))
        p.send_signal(sig)
    elif how == "after-start":
        deadline = time.time() + 60
        while not os.path.exists(started) and time.time() < deadline:
            time.sleep(0.02)
        p.send_signal(sig)
    p.wait(timeout=60)
    err = p.stderr.read().decode()
    time.sleep(late_s + 0.5)  # a surviving llc writes meanwhile
    # A random moment may fall before kinac handles signals (death by the
    # signal itself) or after it finished (exit 0, the output written).
    expected = ({-signal.SIGINT, -sig, 0} if how.startswith("delay:")
                else {-signal.SIGINT})
    if p.returncode not in expected:
        problems.append(f"exit status {p.returncode}, expected death by "
                        f"SIGINT; stderr:\n{err}")
    if os.path.exists(started):
        os.remove(started)
    left = [f for f in os.listdir(case_dir)
            if not (p.returncode == 0 and f == "out.o")]
    if left:
        problems.append(f"files left beside the output: {left}")
    if os.listdir(tmpdir):
        problems.append(f"temporary files left: {os.listdir(tmpdir)}")
    return problems


def interrupt_link_case(kinac, work, bindir, sig):
    """kinac gets `sig` while the C compiler driver links (a fake `cc` that
    sleeps in a child process, then writes the executable): no executable,
    and nothing left in TMPDIR, the temporary include folder with the
    module's header included."""
    problems = []
    name = signal.Signals(sig).name
    case_dir = fresh(os.path.join(work, f"interrupt-link-{name}"))
    tmpdir = fresh(os.path.join(work, f"interrupt-link-{name}-tmp"))
    started = os.path.join(work, f"interrupt-link-{name}.started")
    cc = make_fake(bindir, f"slow-cc-{name}",
                   'while [ $# -gt 0 ]; do [ "$1" = -o ] && o=$2; shift; '
                   f'done\n: > "{started}"\n'
                   '(sleep 1; echo late > "$o") &\nwait\n')
    main_c = os.path.join(case_dir, "main.c")
    with open(main_c, "w") as f:
        f.write("int main(void) { return 0; }\n")
    app = os.path.join(case_dir, "app")
    p = subprocess.Popen([kinac, GOOD, main_c, "-o", app], cwd=case_dir,
                         env=dict(os.environ, TMPDIR=tmpdir, CC=cc),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not os.path.exists(started) and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(sig)
    p.wait(timeout=60)
    err = p.stderr.read().decode()
    time.sleep(1.5)
    if os.path.exists(started):
        os.remove(started)
    if p.returncode != -signal.SIGINT:
        problems.append(f"exit status {p.returncode}, expected death by "
                        f"SIGINT; stderr:\n{err}")
    left = [f for f in os.listdir(case_dir) if f != "main.c"]
    if left:
        problems.append(f"files left beside the output: {left}")
    if os.listdir(tmpdir):
        problems.append(f"temporary files left: {os.listdir(tmpdir)}")
    return problems


def interrupt_stress(kinac, work, bindir, iterations, load, hows):
    """The interrupt cases `iterations` times each, with `load` busy
    processes (`yes > /dev/null`) competing for the processors and the
    signal sent at random moments too: for reproducing races by hand
    (--stress-interrupts N); returns (case, problems) for every failure."""
    import random
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
            for _ in range(load)]
    failures = []
    try:
        for i in range(iterations):
            for sig in (signal.SIGINT, signal.SIGTERM):
                for how in hows:
                    if how == "delay":
                        how = f"delay:{random.uniform(0.0, 0.4):.3f}"
                    problems = interrupt_case(kinac, work, bindir, sig, how,
                                              tag=f"-{i}", late_s=0.5)
                    if problems:
                        failures.append((f"{i}: {signal.Signals(sig).name} "
                                         f"{how}", problems))
            print(f"iteration {i + 1}/{iterations}: {len(failures)} "
                  "failures so far", flush=True)
            for d in os.listdir(work):
                if d.endswith(f"-{i}") or d.endswith(f"-{i}-tmp"):
                    shutil.rmtree(os.path.join(work, d), ignore_errors=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    return failures


def success_leaves_nothing(kinac, work):
    """A successful compile (and -v) leaves TMPDIR empty too."""
    problems = []
    case_dir = fresh(os.path.join(work, "success"))
    tmpdir = fresh(os.path.join(work, "success-tmp"))
    out = os.path.join(case_dir, "out.o")
    rc, err = run(kinac, [GOOD, "-v", "-o", out], case_dir, tmpdir)
    if rc != 0:
        problems.append(f"exit code {rc}, expected 0; stderr:\n{err}")
    for tool in ("mlir-translate", "llc"):
        if not any(os.path.basename(l.split(" ")[0]) == tool
                   for l in err.splitlines()):
            problems.append(f"-v did not print the {tool} command:\n{err}")
    if not os.path.isfile(out):
        problems.append("no output file")
    if os.listdir(tmpdir):
        problems.append(f"temporary files left: {os.listdir(tmpdir)}")
    return problems


def link_failure_case(kinac, work, fake):
    """A failing C compiler driver: no executable, no temporaries."""
    problems = []
    case_dir = fresh(os.path.join(work, "link"))
    tmpdir = fresh(os.path.join(work, "link-tmp"))
    main_c = os.path.join(case_dir, "main.c")
    with open(main_c, "w") as f:
        f.write("int main(void) { return 0; }\n")
    app = os.path.join(case_dir, "app")
    # $CC may hold arguments after the program, as make allows.
    rc, err = run(kinac, [GOOD, main_c, "-o", app], case_dir, tmpdir,
                  env={"CC": f"{fake} --from-cc"})
    if rc != 1:
        problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
    if "failed with exit code 3" not in err or "fake tool:" not in err or \
            f"command: {fake} --from-cc " not in err:
        problems.append(f"the failing link is not explained:\n{err}")
    left = [f for f in os.listdir(case_dir) if f != "main.c"]
    if left:
        problems.append(f"files left beside the output: {left}")
    if os.listdir(tmpdir):
        problems.append(f"temporary files left: {os.listdir(tmpdir)}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--stress-interrupts", type=int, metavar="N",
                    help="only run the interrupt cases N times each under "
                    "load, signals at random moments too")
    ap.add_argument("--load", type=int, default=2,
                    help="busy processes during --stress-interrupts")
    ap.add_argument("--stress-how", default="from-tool,after-start,delay",
                    help="which interrupt cases --stress-interrupts runs")
    args = ap.parse_args()
    kinac = os.path.abspath(args.kinac)
    work = fresh(os.path.abspath(args.workdir))
    bindir = fresh(os.path.join(work, "bin"))
    if args.stress_interrupts:
        hows = args.stress_how.split(",")
        failures = interrupt_stress(kinac, work, bindir,
                                    args.stress_interrupts, args.load, hows)
        for name, problems in failures:
            print("FAIL " + name)
            for p in problems:
                print("  " + p.replace("\n", "\n  "))
        print(f"{len(failures)} failures in "
              f"{args.stress_interrupts * 2 * len(hows)} interrupted runs")
        return 1 if failures else 0
    fakes = {n: make_fake(bindir, n, body) for n, (body, _) in FAKES.items()}

    results = []
    for tool in ("mlir-translate", "llc"):
        for name, (_, how) in FAKES.items():
            results.append((f"{tool}-{name}", tool_case(
                kinac, work, bindir, tool, fakes[name], name, how)))
        # A missing tool (an explicit path that does not exist).
        problems = []
        case_dir = fresh(os.path.join(work, f"{tool}-missing"))
        tmpdir = fresh(os.path.join(work, f"{tool}-missing-tmp"))
        out = os.path.join(case_dir, "out.o")
        rc, err = run(kinac, [GOOD, f"--{tool}=/nonexistent/{tool}", "-o",
                              out], case_dir, tmpdir)
        if rc != 1 or not err.startswith(
                f"kinac: error: cannot run '{tool}': '/nonexistent/{tool}' is "
                "not an executable file"):
            problems.append(f"exit code {rc}; stderr:\n{err}")
        check_clean(case_dir, tmpdir, out, False, problems)
        results.append((f"{tool}-missing", problems))
    results.append(("keep-temps", keep_temps_case(kinac, work, fakes["fail"])))
    for sig in (signal.SIGINT, signal.SIGTERM):
        name = signal.Signals(sig).name
        results.append((f"interrupted-{name}",
                        interrupt_case(kinac, work, bindir, sig)))
        # The signal right after the spawn, three times: a kinac that records
        # the tool's process id only after spawning it loses this race now
        # and then (the tool then survives and writes its output late).
        problems = []
        for i in range(3):
            problems += interrupt_case(kinac, work, bindir, sig, "from-tool",
                                       tag=f"-{i}")
        results.append((f"interrupted-{name}-from-tool", problems))
        results.append((f"interrupted-link-{name}",
                        interrupt_link_case(kinac, work, bindir, sig)))
    results.append(("success-leaves-nothing",
                    success_leaves_nothing(kinac, work)))
    results.append(("link-failure", link_failure_case(kinac, work,
                                                      fakes["fail"])))

    failed = 0
    for name, problems in results:
        print(("FAIL " if problems else "PASS ") + name)
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
        failed += bool(problems)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
