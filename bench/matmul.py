#!/usr/bin/env python3
"""Matrix-product benchmark: kinac's generated code against OpenBLAS.

Compiles `C = matmul(A, B)` on f32[?, ?] operands with kinac twice, at -O2
(the register-tiled, vectorised kernel of src/lowering/MatmulKernel.cpp) and
at -O0 (linalg-to-loops' scalar loops), both for this machine's processor
(`--mcpu=native`, as OpenBLAS picks its kernel for the processor at run
time), links them with bench/matmul_bench.c and OpenBLAS (Debian's
libopenblas-dev, installed when missing), and prints, for each shape, the
GFLOP/s of each (best of 5 rounds of >= 0.2 s, one thread) and the ratios.
kinac's entry allocates its result on each call (part of its time);
OpenBLAS writes into a buffer allocated once.

Usage: bench/matmul.py [--kinac build/bin/kinac] [--mcpu native]
                       [--shapes 256x256x256,...]   (M x N x K)
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIR = """func @mm(%a: f32[?, ?], %b: f32[?, ?]) -> f32[?, ?] {
  %c = matmul %a, %b
  return %c
}
"""
# Square sizes, the digits model's two layers over the whole data set, and
# sizes that are no multiple of the kernel's 4 x 16 tile.
SHAPES = ("64x64x64,128x128x128,256x256x256,512x512x512,1024x1024x1024,"
          "1797x32x64,1797x10x32,1000x1000x1000,333x77x129")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(f"bench/matmul.py: {' '.join(cmd)} failed:\n"
                         f"{p.stdout}{p.stderr}")
        sys.exit(1)
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinac", default=os.path.join(ROOT, "build", "bin", "kinac"))
    ap.add_argument("--mcpu", default="native")
    ap.add_argument("--shapes", default=SHAPES)
    args = ap.parse_args()
    env = dict(os.environ, KINA_WITH_BENCH="1")
    subprocess.run([os.path.join(ROOT, "scripts", "install-deps.sh")],
                   check=True, env=env, stdout=subprocess.DEVNULL)

    with tempfile.TemporaryDirectory() as tmp:
        kir = os.path.join(tmp, "mm.kir")
        with open(kir, "w") as f:
            f.write(KIR)
        objs = []
        for level, prefix in (("-O2", ""), ("-O0", "o0_")):
            stem = os.path.join(tmp, "mm_" + level[1:].lower())
            common = [args.kinac, kir, level, "--mcpu=" + args.mcpu]
            if prefix:
                common.append("--symbol-prefix=" + prefix)
            run(common + ["-o", stem + ".o"])
            run(common + ["--emit=header", "-o", stem + ".h"])
            objs.append(stem + ".o")
        link = run([args.kinac, "--print-link-flags"]).split()
        exe = os.path.join(tmp, "matmul_bench")
        run(["cc", "-O2", "-I", tmp, "-I", "/usr/include/x86_64-linux-gnu/openblas-pthread",
             os.path.join(ROOT, "bench", "matmul_bench.c"), *objs, "-o", exe,
             *link, "-lopenblas", "-lm"])

        print(f"f32 matmul, one thread, kinac --mcpu={args.mcpu}; GFLOP/s "
              f"(best of 5 rounds); ratio = kinac -O2 / OpenBLAS; max diff "
              f"= max |kinac - OpenBLAS| / max |OpenBLAS|")
        print(f"{'M x N x K':>18} {'kinac -O2':>10} {'kinac -O0':>10} "
              f"{'OpenBLAS':>10} {'ratio':>7} {'O2/O0':>7} {'max diff':>9}")
        for shape in args.shapes.split(","):
            m, n, k = shape.split("x")
            out = run([exe, m, n, k]).split()
            g2, g0, gb = (float(x) for x in out[3:6])
            d2 = float(out[6])
            o0 = f"{g0:10.2f}" if g0 > 0 else f"{'-':>10}"
            speedup = f"{g2 / g0:7.1f}" if g0 > 0 else f"{'-':>7}"
            print(f"{shape:>18} {g2:10.2f} {o0} {gb:10.2f} {g2 / gb:7.2f} "
                  f"{speedup} {d2:9.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
