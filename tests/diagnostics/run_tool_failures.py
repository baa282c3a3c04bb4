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
    exts = sorted(os.path.splitext(k)[1] for k in kept)
    if exts != [".ll", ".mlir", ".o"]:
        problems.append(f"expected the kept .mlir, .ll and .o files, got "
                        f"{kept}:\n{err}")
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


def interrupt_case(kinac, work, bindir, sig):
    """kinac gets `sig` while llc (a fake that says it started, sleeps, then
    writes its output) runs: the fake must not outlive kinac to write its
    output, and TMPDIR and the output directory must end empty."""
    problems = []
    name = signal.Signals(sig).name
    case_dir = fresh(os.path.join(work, f"interrupt-{name}"))
    tmpdir = fresh(os.path.join(work, f"interrupt-{name}-tmp"))
    started = os.path.join(case_dir, "started")
    slow = make_fake(bindir, f"slow-{name}",
                     f'for a in "$@"; do o=$a; done\n: > "{started}"\n'
                     'sleep 2\necho late > "$o"\n')
    out = os.path.join(case_dir, "out.o")
    p = subprocess.Popen([kinac, GOOD, f"--llc={slow}", "-o", out],
                         cwd=case_dir, env=dict(os.environ, TMPDIR=tmpdir),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not os.path.exists(started) and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(sig)
    p.wait(timeout=60)
    time.sleep(3)  # longer than the fake's sleep: a surviving llc writes now
    if p.returncode != -signal.SIGINT:
        problems.append(f"exit status {p.returncode}, expected death by "
                        f"SIGINT; stderr:\n{p.stderr.read().decode()}")
    os.remove(started)
    if os.listdir(case_dir):
        problems.append(f"files left beside the output: "
                        f"{os.listdir(case_dir)}")
    if os.listdir(tmpdir):
        problems.append(f"temporary files left: {os.listdir(tmpdir)}")
    return problems


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
    args = ap.parse_args()
    kinac = os.path.abspath(args.kinac)
    work = fresh(os.path.abspath(args.workdir))
    bindir = fresh(os.path.join(work, "bin"))
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
        results.append((f"interrupted-{signal.Signals(sig).name}",
                        interrupt_case(kinac, work, bindir, sig)))
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
