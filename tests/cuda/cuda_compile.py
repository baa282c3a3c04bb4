#!/usr/bin/python3
"""The cuda target without a GPU: compile, link, status 3.

Selects a representative set of conformance cases (tests/conformance/cases):
for every op the first case of each element type it is tested with, run
cases only (no compile errors). Compiles them, as one module, with
`kinac --target=cuda` to an object (its kernels become an embedded fatbin
through the CUDA Toolkit's ptxas), then checks the object:

  - every undefined symbol is one the runtime provides (`mgpu*`,
    `kina_rt_*`, `runtime_*`, `_mlir_ciface_runtime_*`) or the C library's
    (`memcpy`, `memset`, math functions);
  - when libkina_runtime.a defines the runtime's GPU entry points
    (`kina_rt_gpu_enter`, `mgpuLaunchKernel`), a generated C program links
    the object with the runtime and nothing CUDA (`--libs`), and calls every
    `kina_<fn>` of a case expected to succeed, with descriptors of its
    inputs' shapes (data: a dummy non-null pointer; the GPU is entered after
    the descriptor checks and before any data is read): on a machine
    without an NVIDIA GPU each must return 3 with "no CUDA device" or "CUDA
    driver not found" in kina_last_error(), and the program must exit
    normally (the module loads at start-up and unloads at exit without a
    device). On a machine with a GPU (/dev/nvidiactl) that run is skipped.

Prints `N passed, N failed` (one check per case for the compile and the
symbols, one per entry for the status) and exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

RUNTIME_SYMBOL = re.compile(
    r"^(mgpu\w+|kina_rt_\w+|runtime_\w+|_mlir_ciface_runtime_\w+)$")
LIBC_SYMBOLS = {"memcpy", "memset", "memmove", "malloc", "free"}
MATH = re.compile(r"^(exp|log|sin|cos|tan|erf|pow|sqrt|fabs|floor|ceil|"
                  r"round|tanh|atan|expm1|log1p|fma|fmod)f?$")


def select_cases(cases_dir):
    chosen, seen = [], set()
    for name in sorted(os.listdir(cases_dir)):
        meta = json.load(open(os.path.join(cases_dir, name, "case.json")))
        if meta["expect"].get("compile_error"):
            continue
        key = (meta["op"], meta["dtype"])
        if key in seen:
            continue
        seen.add(key)
        chosen.append(meta)
    return chosen


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--libs", default="-lstdc++ -lm")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    cases = select_cases(args.cases)
    kir = os.path.join(args.workdir, "cuda_cases.kir")
    with open(kir, "w") as f:
        f.write("module @cuda_cases\n\n")
        for meta in cases:
            f.write(open(os.path.join(args.cases, meta["name"],
                                      "case.kir")).read() + "\n")
    obj = os.path.join(args.workdir, "cuda_cases.o")
    passed = failed = 0
    r = run([args.kinac, "--target=cuda", kir, "-o", obj])
    if r.returncode != 0:
        print(f"FAIL kinac --target=cuda exited {r.returncode}:\n"
              f"{r.stderr[-4000:]}")
        print(f"0 passed, {len(cases)} failed")
        return 1
    print(f"compiled {len(cases)} cases ({len({c['op'] for c in cases})} ops)"
          " for --target=cuda")
    undefined = run(["nm", "-u", obj]).stdout.split()
    undefined = [s for s in undefined if s != "U"]
    bad = [s for s in undefined
           if not (RUNTIME_SYMBOL.match(s) or s in LIBC_SYMBOLS or
                   MATH.match(s))]
    for s in ("mgpuLaunchKernel", "mgpuModuleLoad", "kina_rt_gpu_enter",
              "kina_rt_gpu_exit", "kina_rt_gpu_check_argument",
              "_mlir_ciface_runtime_gpu_alloc_unranked"):
        if s not in undefined:
            bad.append(f"(missing reference to {s})")
    if "_mlir_ciface_runtime_host_alloc_unranked" in undefined:
        bad.append("_mlir_ciface_runtime_host_alloc_unranked")
    if bad:
        failed += 1
        print(f"FAIL undefined symbols the runtime does not provide: {bad}")
    else:
        passed += len(cases)
        print(f"PASS {len(cases)} objects' undefined symbols are the "
              "runtime's and libc's")

    defined = run(["nm", "--defined-only", args.runtime]).stdout
    if not re.search(r" T kina_rt_gpu_enter$", defined, re.M) or \
            not re.search(r" T mgpuLaunchKernel$", defined, re.M):
        print("NOTE the runtime does not define kina_rt_gpu_enter/"
              "mgpuLaunchKernel yet: link and status checks not run")
    elif os.path.exists("/dev/nvidiactl"):
        print("NOTE an NVIDIA device is present: the no-device status "
              "check is skipped (scripts/gpu-check.sh covers the GPU)")
    else:
        exe = os.path.join(args.workdir, "cuda_cases")
        c = os.path.join(args.workdir, "cuda_cases.c")
        runnable = [m for m in cases if m["expect"].get("status", 0) == 0]
        with open(c, "w") as f:
            f.write("#include <stdint.h>\n#include <stdio.h>\n"
                    "#include <string.h>\n"
                    "const char *kina_last_error(void);\n"
                    "static int64_t d[64][24];\n"
                    "static char dummy[64];\n"
                    "static void arg(int64_t *x, int r, const int64_t *n) {\n"
                    "  int64_t s = 1;\n"
                    "  x[0] = x[1] = (int64_t)(intptr_t)dummy; x[2] = 0;\n"
                    "  for (int i = r - 1; i >= 0; --i) {\n"
                    "    x[3 + i] = n[i]; x[3 + r + i] = s; s *= n[i]; }\n"
                    "}\n")
            for meta in runnable:
                n = meta["results"] + len(meta["inputs"])
                f.write(f"int32_t kina_{meta['function']}("
                        + ", ".join(["void *"] * n) + ");\n")
            f.write("int main(void) {\n  int bad = 0;\n")
            for meta in runnable:
                nres = meta["results"]
                n = nres + len(meta["inputs"])
                f.write("  { memset(d, 0, sizeof d);\n")
                for k, inp in enumerate(meta["inputs"]):
                    shape = np.load(os.path.join(args.cases, meta["name"],
                                                 inp["file"]),
                                    mmap_mode="r").shape
                    dims = ", ".join(str(x) for x in shape) or "0"
                    f.write(f"    {{ const int64_t n[] = {{{dims}}}; "
                            f"arg(d[{nres + k}], {len(shape)}, n); }}\n")
                call = (f"kina_{meta['function']}("
                        + ", ".join(f"d[{i}]" for i in range(n)) + ")")
                f.write(
                    f"    int32_t s = {call};\n"
                    f"    const char *m = kina_last_error();\n"
                    f"    int ok = s == 3 && m && (strstr(m, \"no CUDA "
                    f"device\") || strstr(m, \"CUDA driver not found\"));\n"
                    f"    printf(\"%s {meta['function']}: status %d: %s\\n\","
                    f" ok ? \"PASS\" : \"FAIL\", s, m ? m : \"(null)\");\n"
                    f"    bad += !ok; }}\n")
            f.write("  return bad ? 1 : 0;\n}\n")
        r = run([args.cc, c, obj, args.runtime] + args.libs.split() +
                ["-o", exe])
        if r.returncode != 0:
            failed += 1
            print(f"FAIL link without CUDA libraries:\n{r.stderr[-3000:]}")
        else:
            r = run([exe], timeout=300)
            print(r.stdout, end="")
            print(r.stderr, end="")
            passed += r.stdout.count("PASS ")
            failed += r.stdout.count("FAIL ")
            if r.returncode not in (0, 1):
                failed += 1
                print(f"FAIL the program ended with {r.returncode}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
