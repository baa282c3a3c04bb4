#!/usr/bin/env python3
"""kina-run on a --target=cuda shared library (runtime.kina_run_cuda).

Runs `kina-run axpy_cuda.so axpy --in x.npy --in y.npy --out out.npy
--check-leaks` on the hand-made cuda library of axpy_library.c (out = 2 * x
+ y, f32[N]). kina-run reads the manifest's "target": "cuda", copies the
inputs into CUDA managed memory through the library's runtime, and reads
the result back. With a usable GPU the exit status must be 0 and out.npy
exact (small integers); without one (no driver, no device) it must be 3
with the runtime's reason ("CUDA driver not found" / "no CUDA device") on
stderr and no output file, unless --require-gpu is given (gpu-check.sh),
which makes that a failure. Also checks `--manifest` shows the target.
Prints "kina-run cuda: ok (...)" and exits 0, else prints why and exits 1.
Needs NumPy.
"""
import argparse
import os
import subprocess
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kina-run", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--require-gpu", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    manifest = subprocess.run([args.kina_run, args.library, "--manifest"],
                              capture_output=True, text=True)
    if manifest.returncode != 0 or '"target": "cuda"' not in manifest.stdout:
        print(f"--manifest: {manifest.returncode}: {manifest.stdout}"
              f"{manifest.stderr}")
        return 1
    n = 100003
    x = (np.arange(n) % 13).astype(np.float32)
    y = np.full(n, 2.0, dtype=np.float32)
    xs, ys = os.path.join(args.workdir, "x.npy"), os.path.join(args.workdir,
                                                                "y.npy")
    out = os.path.join(args.workdir, "out.npy")
    np.save(xs, x)
    np.save(ys, y)
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([args.kina_run, args.library, "axpy", "--in", xs,
                        "--in", ys, "--out", out, "--check-leaks"],
                       capture_output=True, text=True)
    if p.returncode == 3 and not args.require_gpu:
        if not any(t in p.stderr for t in ("CUDA driver not found",
                                          "no CUDA device")):
            print(f"status 3 without the reason: {p.stderr}")
            return 1
        if os.path.exists(out):
            print("status 3 but out.npy was written")
            return 1
        print(f"kina-run cuda: ok (no GPU: {p.stderr.strip()})")
        return 0
    if p.returncode != 0:
        print(f"kina-run exited {p.returncode}: {p.stderr}")
        return 1
    got = np.load(out)
    want = 2.0 * x + y
    if got.dtype != np.float32 or got.shape != (n,) or \
            not np.array_equal(got, want):
        bad = int((got != want).sum()) if got.shape == want.shape else n
        print(f"wrong result: {got.dtype} {got.shape}, {bad} elements differ")
        return 1
    print(f"kina-run cuda: ok ({n} elements on the GPU, exact)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
