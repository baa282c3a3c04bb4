#!/usr/bin/env python3
"""Linking checks of libkina_runtime.a (ctest: runtime.linking).

1. A CPU program needs nothing CUDA. scale.kir is compiled with kinac, its
   header generated, and cpu_main.c linked with exactly the flags of
   `kinac --print-link-flags`. Checks: the flags and the archive's undefined
   symbols name nothing CUDA; `readelf -d` of the program names no libcuda /
   libcudart (no CUDA library at all); the program runs with LD_LIBRARY_PATH
   stripped of CUDA directories, and again without the dynamic loader's
   cache (`ld.so --inhibit-cache`, so the system's registered CUDA libraries
   cannot be found either); its GPU allocation gives exactly the status and
   message the machine calls for (3 and "CUDA driver not found
   (libcuda.so.1: ...)" without a driver), and 3 with the forced path in the
   message under KINA_CUDA_DRIVER=/nonexistent/libcuda.so.1.
2. Every public runtime function is declared where a user looks.
   uses_every_function.c, which must call every C function the archive
   exports (read from `nm`), compiles with -Wall -Werror
   -Wimplicit-function-declaration against the generated header alone (an
   include path with nothing else) and against kina/runtime.h, and both
   builds link and run.

Exit status 0 when everything holds; otherwise the failures are printed.
"""
import argparse
import ctypes
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)
    return condition


def run(cmd, env=None, expect=0):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if expect is not None and proc.returncode != expect:
        failures.append("%s exited %d\nstdout: %s\nstderr: %s" %
                        (shlex.join(cmd), proc.returncode, proc.stdout,
                         proc.stderr))
        print("FAIL: " + failures[-1])
    return proc


def stripped_environment(**extra):
    """The environment without CUDA directories in LD_LIBRARY_PATH and
    without KINA_CUDA_DRIVER, plus `extra`."""
    env = dict(os.environ)
    env.pop("KINA_CUDA_DRIVER", None)
    env.pop("KINA_DEVICE", None)
    paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":")
             if p and "cuda" not in p.lower()]
    if paths:
        env["LD_LIBRARY_PATH"] = ":".join(paths)
    else:
        env.pop("LD_LIBRARY_PATH", None)
    env.update(extra)
    return env


def expected_gpu_line():
    """What cpu_main's last line must start with on this machine, or None
    when a driver is present (then 0 or 3, depending on the devices)."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ("gpu: 3 runtime_gpu_alloc_unranked: CUDA driver not found "
                "(libcuda.so.1: ")
    return None


def dynamic_needed(path):
    out = run(["readelf", "-d", path]).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def exported_c_functions(archive):
    out = run(["nm", "-g", "--defined-only", archive]).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T" and not parts[2].startswith("_Z"):
            names.add(parts[2])
    return sorted(names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinac", required=True)
    parser.add_argument("--cc", default="cc")
    parser.add_argument("--include", required=True,
                        help="the source tree's include/ (kina/runtime.h)")
    parser.add_argument("--build-include", required=True,
                        help="<build>/include (kina/RuntimeConfig.h)")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()

    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    gen = os.path.join(work, "generated")  # holds the generated header only
    os.makedirs(gen)
    obj = os.path.join(work, "scale.o")
    header = os.path.join(gen, "scale.h")
    kir = os.path.join(HERE, "scale.kir")
    run([args.kinac, kir, "-o", obj])
    run([args.kinac, kir, "--emit=header", "-o", header])

    # --- 1. A CPU program needs nothing CUDA --------------------------------
    flags = shlex.split(run([args.kinac, "--print-link-flags"]).stdout)
    check(flags and flags[0].endswith("libkina_runtime.a"),
          "--print-link-flags does not start with the archive: %s" % flags)
    check(not any("cuda" in f.lower() for f in flags),
          "--print-link-flags names CUDA: %s" % shlex.join(flags))
    archive = flags[0]
    undefined = run(["nm", "-u", archive]).stdout.split()
    cuda_symbols = sorted({s for s in undefined if s.startswith("cu")})
    check(not cuda_symbols,
          "libkina_runtime.a needs CUDA symbols at link time: %s" %
          cuda_symbols)

    app = os.path.join(work, "cpu_app")
    run([args.cc, os.path.join(HERE, "cpu_main.c"), obj, "-I", gen, "-o", app]
        + flags)
    if not os.path.exists(app):
        return report()
    needed = dynamic_needed(app)
    check(needed, "readelf -d shows no NEEDED entries at all")
    check(not any(re.match(r"lib(cuda|cudart|nv)", n) for n in needed),
          "the CPU program needs a CUDA library: %s" % needed)

    expected = expected_gpu_line()
    env = stripped_environment()
    loaders = [[], ["/lib64/ld-linux-x86-64.so.2", "--inhibit-cache"]]
    for loader in loaders:
        if loader and not os.path.exists(loader[0]):
            continue
        proc = run(loader + [app], env=env)
        lines = proc.stdout.splitlines()
        what = " ".join(loader + [app])
        if not check(len(lines) == 2 and lines[0] == "cpu: ok",
                     "%s printed %r" % (what, proc.stdout)):
            continue
        if expected:
            check(lines[1].startswith(expected),
                  "%s: GPU line %r, expected %r..." % (what, lines[1],
                                                       expected))
        else:
            check(re.match(r"gpu: (0 allocated|3 .*(no CUDA device|cuInit))",
                           lines[1]), "%s: GPU line %r" % (what, lines[1]))

    forced = stripped_environment(KINA_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    proc = run([app], env=forced)
    check(proc.stdout.splitlines()[-1:] == [
        "gpu: 3 runtime_gpu_alloc_unranked: CUDA driver not found "
        "(/nonexistent/libcuda.so.1: /nonexistent/libcuda.so.1: cannot open "
        "shared object file: No such file or directory)"],
        "KINA_CUDA_DRIVER=/nonexistent: %r" % proc.stdout)

    # --- 2. Every public function is declared -------------------------------
    source = os.path.join(HERE, "uses_every_function.c")
    with open(source) as f:
        text = f.read()
    functions = exported_c_functions(archive)
    check(len(functions) >= 10,
          "nm found only %d exported C functions" % len(functions))
    for name in functions:
        check(re.search(r"\b%s\(" % re.escape(name), text),
              "uses_every_function.c does not call %s" % name)
    strict = ["-std=c99", "-Wall", "-Wextra", "-Werror",
              "-Wimplicit-function-declaration", "-Wstrict-prototypes"]
    variants = [
        ("generated header", ['-DKINA_TEST_HEADER="scale.h"', "-I", gen]),
        ("kina/runtime.h", ["-DKINA_TEST_HEADER=<kina/runtime.h>",
                            "-I", args.include, "-I", args.build_include]),
    ]
    for label, include in variants:
        exe = os.path.join(work, "uses_" + label.replace(" ", "_")
                           .replace("/", "_").replace(".", "_"))
        proc = run([args.cc] + strict + include + [source, "-o", exe] + flags)
        if proc.returncode != 0:
            check(False, "against the %s: does not compile" % label)
            continue
        proc = run([exe], env=forced)
        check(proc.stdout.strip() == "ok",
              "against the %s: %r" % (label, proc.stdout))
    return report()


def report():
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all linking checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
