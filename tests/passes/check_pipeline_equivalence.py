#!/usr/bin/env python3
"""Checks that kina-opt's named pipeline reproduces kinac's pipeline.

For every input module and every option set, compiles the module with
`kinac --emit=mlir` (MLIRGen's output), runs that text through
`kina-opt --kina-cpu-pipeline="<options>"`, and compares the result with
what `kinac --emit=mlir-llvm` prints for the same module and options: the
bytes must be equal (kina-opt, as mlir-opt, ends its output with one more
newline than kinac; that one byte is the only allowance). kinac's options
map to the pipeline's: -ON to opt-level=N, --symbol-prefix=P to
symbol-prefix=P (MLIRGen applies it; the pipeline takes it too), and
--abi-version-for-testing=V to abi-version=V. Prints one line per failing
pair and `N passed, N failed`; exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

# (kinac options, pipeline options)
OPTION_SETS = [
    ([], ""),
    (["-O0"], "opt-level=0"),
    (["-O1"], "opt-level=1"),
    (["-O3"], "opt-level=3"),
    (["--symbol-prefix=p_"], "symbol-prefix=p_"),
    (["-O0", "--symbol-prefix=lib_"], "opt-level=0 symbol-prefix=lib_"),
    (["--abi-version-for-testing=7"], "abi-version=7"),
]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--kina-opt", required=True)
    ap.add_argument("inputs", nargs="+", help=".kir modules")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kir in args.inputs:
            for kinac_opts, pipeline_opts in OPTION_SETS:
                what = f"{os.path.basename(kir)} {' '.join(kinac_opts)}"
                mlir = os.path.join(tmp, "in.mlir")
                rc, _, err = run([args.kinac, kir, "--emit=mlir", "-o", mlir]
                                 + kinac_opts)
                if rc != 0:
                    print(f"FAIL {what}: kinac --emit=mlir exited {rc}\n{err}")
                    failed += 1
                    continue
                rc, ref, err = run([args.kinac, kir, "--emit=mlir-llvm", "-o",
                                    "-"] + kinac_opts)
                if rc != 0:
                    print(f"FAIL {what}: kinac --emit=mlir-llvm exited {rc}\n"
                          f"{err}")
                    failed += 1
                    continue
                rc, out, err = run([args.kina_opt, mlir,
                                    f"--kina-cpu-pipeline={pipeline_opts}"])
                if rc != 0:
                    print(f"FAIL {what}: kina-opt exited {rc}\n{err}")
                    failed += 1
                    continue
                if out.endswith(b"\n\n"):
                    out = out[:-1]
                if out != ref:
                    at = next((i for i, (a, b) in enumerate(zip(out, ref))
                               if a != b), min(len(out), len(ref)))
                    line = ref[:at].count(b"\n") + 1
                    print(f"FAIL {what}: kina-opt's output differs from "
                          f"kinac's at line {line}")
                    failed += 1
                    continue
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
