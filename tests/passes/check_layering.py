#!/usr/bin/env python3
"""Checks that the middle end does not see the front end.

The passes (src/passes/), the targets (src/targets/) and kina-opt
(src/kina-opt/) read what they need from the IR (kina/IRConventions.h,
docs/architecture.md): none of their sources may include a front-end or
driver header (kina/AST.h, kina/Frontend.h, kina/MLIRGen.h, kina/Shapes.h,
kina/Driver.h, ... or a file under src/frontend/, src/lowering/ or
src/driver/). Prints each offending include and `N passed, N failed` (one
per source file); exits 1 on any.
"""
import argparse
import os
import re
import sys

MIDDLE = ["src/passes", "src/targets", "src/kina-opt"]
# kina/CudaPasses.h.inc: generated from src/targets/cuda/CudaPasses.td, the
# cuda target's own passes.
ALLOWED = {"kina/abi.h", "kina/IRConventions.h", "kina/Passes.h",
           "kina/Passes.h.inc", "kina/CudaPasses.h.inc", "kina/Pipeline.h",
           "kina/Target.h",
           # kina/Tuning.h: schedule spaces and tuned parameters the passes
           # read (no front end: keys come from MLIR locations).
           "kina/Tuning.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    passed = failed = 0
    for folder in MIDDLE:
        for root, _, files in os.walk(os.path.join(args.source_dir, folder)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(root, name)
                bad = []
                with open(path) as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        if inc.startswith("kina/") and inc not in ALLOWED:
                            bad.append((n, inc))
                        elif re.search(r"(^|/)(frontend|lowering|driver)/",
                                       inc):
                            bad.append((n, inc))
                rel = os.path.relpath(path, args.source_dir)
                for n, inc in bad:
                    print(f"FAIL {rel}:{n}: includes \"{inc}\"")
                if bad:
                    failed += 1
                else:
                    passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
