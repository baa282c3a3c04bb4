#!/usr/bin/env python3
"""Checks that kina-opt's named pipelines reproduce kinac's pipelines.

For every input module and every option set, compiles the module with
`kinac --emit=mlir` (MLIRGen's output), runs that text through
`kina-opt --kina-<target>-pipeline="<options>"`, and compares the result with
what kinac prints for the same module and options: the bytes must be equal
(kina-opt, as mlir-opt, ends its output with one more newline than kinac;
that one byte is the only allowance). kinac's options map to the
pipeline's: -ON to opt-level=N, --symbol-prefix=P to symbol-prefix=P
(MLIRGen applies it; the pipeline takes it too), and
--abi-version-for-testing=V to abi-version=V.

Targets (--targets, default both):
  cpu:  `kinac --emit=mlir-llvm` against `--kina-cpu-pipeline`;
  cuda: `kinac --target=cuda --emit=mlir-gpu` (the outlined kernels, the
        last stage whose output is deterministic: the fatbin records
        ptxas's time) against `--kina-cuda-pipeline="stop-after=mlir-gpu"`.
        It needs the CUDA Toolkit's ptxas, as kinac --target=cuda does
        ($CUDA_PATH, else /usr/local/cuda); without it the cuda pairs are
        reported as skipped.
Prints one line per failing pair and `N passed, N failed` per target; exits
1 on any failure.
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

# Per target: kinac's options selecting the target and the stage compared,
# and the pipeline options that stop at the same stage.
TARGETS = {
    "cpu": (["--emit=mlir-llvm"], ""),
    "cuda": (["--target=cuda", "--emit=mlir-gpu"], "stop-after=mlir-gpu"),
}


def has_ptxas():
    root = os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return os.access(os.path.join(root, "bin", "ptxas"), os.X_OK)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def check_target(args, target, tmp):
    """Runs every (input, option set) pair for `target`; returns (passed,
    failed)."""
    kinac_stage, pipeline_stage = TARGETS[target]
    passed = failed = 0
    for kir in args.inputs:
        for kinac_opts, pipeline_opts in OPTION_SETS:
            what = (f"{target}: {os.path.basename(kir)} "
                    f"{' '.join(kinac_opts)}")
            mlir = os.path.join(tmp, "in.mlir")
            rc, _, err = run([args.kinac, kir, "--emit=mlir", "-o", mlir]
                             + kinac_opts)
            if rc != 0:
                print(f"FAIL {what}: kinac --emit=mlir exited {rc}\n{err}")
                failed += 1
                continue
            rc, ref, err = run([args.kinac, kir] + kinac_stage + ["-o", "-"]
                               + kinac_opts)
            if rc != 0:
                print(f"FAIL {what}: kinac {' '.join(kinac_stage)} exited "
                      f"{rc}\n{err}")
                failed += 1
                continue
            options = " ".join(o for o in (pipeline_opts, pipeline_stage) if o)
            rc, out, err = run([args.kina_opt, mlir,
                                f"--kina-{target}-pipeline={options}"])
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
    return passed, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--kina-opt", required=True)
    ap.add_argument("--targets", default="cpu,cuda",
                    help="comma-separated: cpu, cuda (default both)")
    ap.add_argument("inputs", nargs="+", help=".kir modules")
    args = ap.parse_args()
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.targets.split(","):
            if target not in TARGETS:
                print(f"unknown target '{target}' (known: "
                      f"{', '.join(TARGETS)})")
                return 2
            if target == "cuda" and not has_ptxas():
                print("cuda: skipped (no ptxas in $CUDA_PATH or "
                      "/usr/local/cuda)")
                continue
            passed, failed = check_target(args, target, tmp)
            print(f"{target}: {passed} passed, {failed} failed")
            if failed or not passed:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
