#!/usr/bin/env python3
"""Compile-time benchmark of kinac: the digits model to an object file.

Runs `kinac samples/digits/mlp.kir --time-stages -o <tmp>.o` several times,
parses the per-stage wall times kinac prints, and prints the median of each
stage and of the whole process (measured here, around the process). The
target of issue 2 is a whole compile under 1 s on a 2-core machine.

Usage: bench/compile_time.py [--kinac build/bin/kinac] [--runs 7] [--kir FILE]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinac", default=os.path.join(ROOT, "build", "bin", "kinac"))
    ap.add_argument("--kir", default=os.path.join(ROOT, "samples", "digits", "mlp.kir"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--opt", default="-O2")
    args = ap.parse_args()

    stages = {}
    wall = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.o")
        for _ in range(args.runs):
            start = time.perf_counter()
            p = subprocess.run([args.kinac, args.kir, args.opt, "--time-stages", "-o", out],
                               capture_output=True, text=True)
            wall.append((time.perf_counter() - start) * 1000.0)
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
                return 1
            for line in p.stderr.splitlines():
                m = re.match(r"\s+(\S+)\s+([0-9.]+) ms", line)
                if m:
                    stages.setdefault(m.group(1), []).append(float(m.group(2)))
    print(f"kinac compile time, {os.path.relpath(args.kir, ROOT)} {args.opt}, "
          f"median of {args.runs} runs ({os.cpu_count()} cores)")
    for name, values in stages.items():
        print(f"  {name:<16} {statistics.median(values):9.1f} ms")
    med = statistics.median(wall)
    print(f"  {'process':<16} {med:9.1f} ms   (target < 1000 ms: "
          f"ratio {med / 1000.0:.2f} of the budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
