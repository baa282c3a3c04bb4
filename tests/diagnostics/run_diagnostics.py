#!/usr/bin/env python3
"""Bad-input tests of kinac: every case must fail cleanly.

Each `cases/*.kir` file names what kinac must print in its leading comment
lines:

    # expect: LINE:COL: error: MESSAGE-SUBSTRING

(several `expect` lines for several errors; `# expect-driver: MESSAGE` for an
error with no place in the source, printed as `kinac: error: ...`;
`# flags: ...` for extra kinac flags). For each
case the test checks that kinac exits with status 1, prints each expected
`FILE:LINE:COL: error: ...` (and for located errors the source line and a
caret), does not crash, writes no output file, leaves an existing output
file byte-for-byte untouched, and leaves no temporary file beside it.
Driver-level cases (missing file, bad flags, empty and binary inputs) are
built in below.

Usage: run_diagnostics.py --kinac PATH --workdir DIR
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SENTINEL = b"existing output, must survive\n"


def run_case(kinac, workdir, name, args, expects, input_path=None):
    """Runs kinac with `args` + `-o out.o` twice (output absent, then an
    existing output); returns a list of failure messages."""
    problems = []
    case_dir = os.path.join(workdir, name)
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    for existing in (False, True):
        out = os.path.join(case_dir, "out.o")
        if existing:
            with open(out, "wb") as f:
                f.write(SENTINEL)
        p = subprocess.run([kinac] + args + ["-o", out], capture_output=True,
                           cwd=case_dir, timeout=120)
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode != 1:
            problems.append(f"exit code {p.returncode}, expected 1; stderr:\n{err}")
        for kind, text in expects:
            if kind == "driver":
                if f"kinac: error: {text}" not in err and not re.search(
                        r"kinac: error: .*" + re.escape(text), err):
                    problems.append(f"missing 'kinac: error: ...{text}' in:\n{err}")
            else:
                loc, msg = text
                want = f"{input_path}:{loc}: error: "
                lines = err.splitlines()
                hits = [i for i, l in enumerate(lines) if l.startswith(want) and msg in l]
                if not hits:
                    problems.append(f"missing '{want}...{msg}' in:\n{err}")
                elif not any(i + 2 < len(lines) and lines[i + 2].strip().startswith("^")
                             for i in hits):
                    problems.append(f"no source line and caret after '{want}{msg}':\n{err}")
        if existing:
            with open(out, "rb") as f:
                if f.read() != SENTINEL:
                    problems.append("existing output file was modified")
        elif os.path.exists(out):
            problems.append("an output file was written")
        leftovers = [f for f in os.listdir(case_dir) if f != "out.o"]
        if leftovers:
            problems.append(f"files left beside the output: {leftovers}")
    return problems


def parse_flags(path):
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            m = re.match(r"\s*(?:#|//)\s*flags:\s*(.*)$", raw.decode("utf-8", "replace"))
            if m:
                return m.group(1).split()
    return []


def parse_expects(path):
    expects = []
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            line = raw.decode("utf-8", "replace")
            m = re.match(r"\s*(?:#|//)\s*expect:\s*(\d+:\d+): error: (.*)$", line)
            if m:
                expects.append(("located", (m.group(1), m.group(2).strip())))
            m = re.match(r"\s*(?:#|//)\s*expect-driver:\s*(.*)$", line)
            if m:
                expects.append(("driver", m.group(1).strip()))
    return expects


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    kinac = os.path.abspath(args.kinac)

    results = []
    # Driver-level cases: no place in a source file.
    gen = os.path.join(args.workdir, "inputs")
    os.makedirs(gen, exist_ok=True)
    empty = os.path.join(gen, "empty.kir")
    open(empty, "wb").close()
    binary = os.path.join(gen, "binary.kir")
    with open(binary, "wb") as f:
        f.write(bytes(range(256)) * 4)
    good = os.path.join(HERE, "..", "..", "samples", "digits", "mlp.kir")
    builtin = [
        ("missing-file", [os.path.join(gen, "does-not-exist.kir")],
         [("driver", "cannot open")], None),
        ("no-input", [], [("driver", "no input files")], None),
        ("bad-flag", [good, "--no-such-flag"], [("driver", "--no-such-flag")], None),
        ("bad-emit", [good, "--emit=exe"], [("driver", "emit")], None),
        ("bad-opt-level", [good, "-O7"], [("driver", "-O")], None),
        ("bad-target", [good, "--target=tpu"], [("driver", "target")], None),
        ("missing-llc", [good, "--llc=/nonexistent/llc"], [("driver", "llc")], None),
        ("empty-file", [empty], [("located", ("1:1", "expected"))], empty),
        ("binary-file", [binary], [("located", ("1:1", ""))], binary),
    ]
    for name, cargs, expects, path in builtin:
        results.append((name, run_case(kinac, args.workdir, name, cargs, expects, path)))

    for path in sorted(glob.glob(os.path.join(HERE, "cases", "*.kir"))):
        name = os.path.splitext(os.path.basename(path))[0]
        expects = parse_expects(path)
        if not expects:
            results.append((name, ["case has no '# expect:' line"]))
            continue
        results.append((name, run_case(kinac, args.workdir, name,
                                       [path] + parse_flags(path), expects, path)))

    failed = 0
    for name, problems in results:
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("  " + p.replace("\n", "\n  "))
        else:
            print(f"PASS {name}")
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
