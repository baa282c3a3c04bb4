#!/usr/bin/env python3
"""Build-system integration tests of kinac (docs/integration.md).

One subcommand per ctest test; each works in its own folder under --work:

  install      `cmake --install` into a temporary prefix: the files the
               install tree must hold, the installed kinac compiling and
               printing link flags that point into the prefix, kina.pc; then
               the prefix is copied elsewhere (relocated) and the copy's
               kinac, kina.pc and CMake package must point into the copy.
               Sets up the prefixes the two sample tests use.
  cmake-project  samples/cmake-project configured with find_package(Kina)
               against the relocated prefix, built and run; a second build
               recompiles nothing, touching one .kir recompiles that module
               only, touching kinac recompiles both; a bad TARGET or
               OPT_LEVEL is a configure error with a clear message; `TARGET
               cuda` builds a program that links nothing CUDA (a configure
               error when this kinac has no cuda target).
  make-project samples/make-project built with `make -j` and the installed
               kinac, run; the dependency files name the .kir file and
               kinac; `make -q` says up to date, touching a .kir rebuilds
               that module only, touching kinac rebuilds both.
  depfile      kinac -MD/-MF/-MT/-MP: default names, escaping, errors.
  determinism  every stage's output is byte-identical across runs, working
               directories, temporary directories and input paths, and holds
               no path of them.
  version      objects carry the version stamp; an object compiled for
               another ABI returns 1 with a message naming both versions on
               every call, one for the right ABI returns 0.
  link-flags   `kinac m.kir main.c ...` with the C compiler's flags: -I and
               -D/-U (joined and separate), #include <kina/runtime.h>, -L/-l
               of a library built here, -Wl, and -Xlinker, -Xcompiler,
               -std=/-W/-f/-m flags, CPPFLAGS/CFLAGS/LDFLAGS/LDLIBS from the
               environment, the -O level reaching the C compile, a warning
               (exit 0) for C flags when nothing is linked, clear errors for
               an unknown flag and a flag without its value.
  threads      compiled code on the runtime's thread pool: the same bits
               at KINA_NUM_THREADS=1 and 2, loops split at 2 (the pool's
               counter), small functions and -O0 never split, two threads
               calling at once.
  modules      two modules both named model.kir (same module name, same
               function name), prefixed apart: both headers in one C file,
               one runtime, one program; and two modules of one name without
               prefixes but with different functions.

Usage: run_integration.py SUBCOMMAND --build-dir B --source-dir S --work W
       --kinac K --cmake CMAKE --generator G --cc CC
Prints what it checks; exits 1 on the first failure.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import time


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def run(args, cwd=None, env=None, expect=0, timeout=600):
    """Runs a command; returns (stdout, stderr) as text. Fails unless the exit
    code is `expect` (None: any)."""
    shown = " ".join(str(a) for a in args)
    print(f"+ {shown}" + (f"   (in {cwd})" if cwd else ""), flush=True)
    p = subprocess.run([str(a) for a in args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    if expect is not None and p.returncode != expect:
        raise Failure(f"'{shown}' exited {p.returncode}, expected {expect}\n"
                      f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def mtime(path):
    return os.stat(path).st_mtime_ns


def touch(path):
    """Makes `path` newer than anything built so far (the sleep covers file
    systems with coarse timestamps)."""
    time.sleep(1.1)
    os.utime(path)


def prefix_dir(opts):
    return os.path.join(opts.work, "install", "prefix")


def relocated_dir(opts):
    return os.path.join(opts.work, "install", "relocated", "kina")


def version_of(kinac):
    out = run([kinac, "--version"]).stdout
    m = re.search(r"kinac version (\S+)", out)
    check(m, f"no version in '{out}'")
    return m.group(1)


# --- install ----------------------------------------------------------------

INSTALLED = [
    "bin/kinac",
    "bin/kina-opt",
    "lib/libkina_runtime.a",
    "include/kina/abi.h",
    "include/kina/runtime.h",
    "include/kina/RuntimeConfig.h",
    "lib/cmake/Kina/KinaConfig.cmake",
    "lib/cmake/Kina/KinaConfigVersion.cmake",
    "lib/cmake/Kina/KinaTargets.cmake",
    "lib/cmake/Kina/KinaFunctions.cmake",
    "lib/pkgconfig/kina.pc",
]

SCALE_KIR = """func @scale(%x: f32[N]) -> f32[N] {
  %y = mul %x, 3.0
  return %y
}
"""

def codegen_targets(prefix):
    """KINA_CODEGEN_TARGETS of the installed CMake package at `prefix`."""
    path = os.path.join(prefix, "lib", "cmake", "Kina", "KinaConfig.cmake")
    with open(path) as f:
        m = re.search(r"set\(KINA_CODEGEN_TARGETS ([^)]*)\)", f.read())
    return m.group(1).replace(";", " ").split() if m else []


# A TARGET cuda program: its argument in managed memory from the runtime,
# the status and the first element printed ("cuda: <status> ...").
CUDA_MAIN = r"""#include "m.h"
#include <stdio.h>
#include <string.h>
int main(void) {
  KinaMemRef1 x = {0, 0, 0, {3}, {0}}, out;
  KinaUnrankedMemRef u = {1, &x};
  int32_t s = _mlir_ciface_runtime_gpu_alloc_unranked(&u, 4);
  if (s != 0) {
    printf("cuda: %d %s\n", (int)s, kina_last_error());
    return 0;
  }
  ((float *)x.aligned)[0] = 2.0f;
  ((float *)x.aligned)[1] = 1.0f;
  ((float *)x.aligned)[2] = 0.0f;
  memset(&out, 0, sizeof out);
  s = kina_scale(&out, &x);
  if (s != 0)
    printf("cuda: %d %s\n", (int)s, kina_last_error());
  else
    printf("cuda: 0 %.1f\n", ((float *)out.aligned)[0]);
  return 0;
}
"""

SCALE_MAIN = r"""#include "scale.h"
#include "kina/runtime.h"
#include <stdio.h>
int main(void) {
  float x[3] = {1.0f, -2.0f, 0.5f};
  KinaMemRef1 in = {x, x, 0, {3}, {1}}, out;
  int32_t s = kina_scale(&out, &in);
  if (s != 0) { printf("status %d: %s\n", s, kina_last_error()); return 1; }
  const float *y = (const float *)out.aligned;
  printf("%g %g %g\n", y[0], y[1], y[2]);
  runtime_free(out.allocated);
  return runtime_live_buffer_count() == 0 ? 0 : 1;
}
"""


def compile_and_link_with(prefix, work, cc, env):
    """Compiles a small module with prefix/bin/kinac and links it by hand
    with `pkg-config --cflags --libs kina`; runs it."""
    kinac = os.path.join(prefix, "bin", "kinac")
    with open(os.path.join(work, "scale.kir"), "w") as f:
        f.write(SCALE_KIR)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(SCALE_MAIN)
    run([kinac, "scale.kir", "-o", "scale.o"], cwd=work, env=env)
    run([kinac, "scale.kir", "--emit=header", "-o", "scale.h"], cwd=work,
        env=env)
    flags = run(["pkg-config", "--cflags", "--libs", "kina"], env=env).stdout
    run([cc, "-std=c99", "main.c", "scale.o"] + flags.split() + ["-o", "app"],
        cwd=work)
    out = run(["./app"], cwd=work).stdout
    check(out.strip() == "3 -6 1.5", f"wrong output '{out}'")


def check_installed_kina_opt(prefix, work):
    """The installed kina-opt runs the cpu pipeline on the installed kinac's
    --emit=mlir output and prints what kinac's --emit=mlir-llvm prints (up
    to the one extra final newline of mlir-opt's output)."""
    kinac = os.path.join(prefix, "bin", "kinac")
    kina_opt = os.path.join(prefix, "bin", "kina-opt")
    check(os.access(kina_opt, os.X_OK), "bin/kina-opt is not executable")
    with open(os.path.join(work, "scale.kir"), "w") as f:
        f.write(SCALE_KIR)
    run([kinac, "scale.kir", "--emit=mlir", "-o", "scale.mlir"], cwd=work)
    ref = run([kinac, "scale.kir", "--emit=mlir-llvm", "-o", "-"],
              cwd=work).stdout
    out = run([kina_opt, "scale.mlir", "--kina-cpu-pipeline"], cwd=work).stdout
    check(out[:-1] == ref if out.endswith("\n\n") else out == ref,
          "installed kina-opt --kina-cpu-pipeline differs from kinac "
          "--emit=mlir-llvm")


def cmd_install(opts):
    root = fresh_dir(os.path.join(opts.work, "install"))
    prefix = prefix_dir(opts)
    run([opts.cmake, "--install", opts.build_dir, "--prefix", prefix])
    for rel in INSTALLED:
        check(os.path.isfile(os.path.join(prefix, rel)), f"missing {rel}")
    check(os.access(os.path.join(prefix, "bin", "kinac"), os.X_OK),
          "bin/kinac is not executable")
    check(version_of(os.path.join(prefix, "bin", "kinac"))
          == version_of(opts.kinac), "installed kinac has another version")
    check_installed_kina_opt(prefix, root)

    # Relocate: a copy elsewhere must work on its own.
    relocated = relocated_dir(opts)
    os.makedirs(os.path.dirname(relocated))
    shutil.copytree(prefix, relocated, symlinks=True)
    env = dict(os.environ)
    env.pop("KINA_LLVM_BIN", None)
    for tree in (prefix, relocated):
        print(f"checking the tree at {tree}")
        kinac = os.path.join(tree, "bin", "kinac")
        flags = run([kinac, "--print-link-flags"], env=env).stdout.split()
        runtime = os.path.realpath(os.path.join(tree, "lib",
                                                "libkina_runtime.a"))
        check(flags and os.path.realpath(flags[0]) == runtime,
              f"--print-link-flags gives {flags}, expected {runtime} first")
        check("-lstdc++" in flags, f"no -lstdc++ in {flags}")
        env["PKG_CONFIG_PATH"] = os.path.join(tree, "lib", "pkgconfig")
        libs = run(["pkg-config", "--libs", "kina"], env=env).stdout.split()
        check(os.path.realpath(libs[0]) == runtime,
              f"pkg-config --libs gives {libs}, expected {runtime} first")
        cflags = run(["pkg-config", "--cflags", "kina"], env=env).stdout
        check(os.path.realpath(cflags.strip()[2:])
              == os.path.realpath(os.path.join(tree, "include")),
              f"pkg-config --cflags gives '{cflags}'")
        modversion = run(["pkg-config", "--modversion", "kina"],
                         env=env).stdout.strip()
        check(modversion == version_of(opts.kinac),
              f"kina.pc version {modversion}")
        work = fresh_dir(os.path.join(root, "use-" + os.path.basename(tree)))
        compile_and_link_with(tree, work, opts.cc, env)
    print("install: ok")


# --- cmake-project -----------------------------------------------------------

def cmake_configure(opts, src, build, prefix, expect=0):
    return run([opts.cmake, "-S", src, "-B", build, "-G", opts.generator,
                f"-DCMAKE_C_COMPILER={opts.cc}",
                f"-DCMAKE_PREFIX_PATH={prefix}"], expect=expect)


def cmd_cmake_project(opts):
    root = fresh_dir(os.path.join(opts.work, "cmake-project"))
    src = os.path.join(root, "src")
    build = os.path.join(root, "build")
    shutil.copytree(os.path.join(opts.source_dir, "samples", "cmake-project"),
                    src)
    prefix = relocated_dir(opts)
    check(os.path.isdir(prefix), "no install tree (run integration.install)")
    cmake_configure(opts, src, build, prefix)
    run([opts.cmake, "--build", build])
    out = run([os.path.join(build, "app")]).stdout
    print(out, end="")
    check("cmake-project: ok" in out, "the sample did not end with ok")

    # One runtime in the program, both prefixed entries, no unprefixed one.
    syms = run(["nm", os.path.join(build, "app")]).stdout
    defined = [l.split()[-1] for l in syms.splitlines()
               if re.match(r"^[0-9a-f]+ [TtDdRrBb] ", l)]
    for name in ("kina_pre_forward", "kina_clf_forward",
                 "_mlir_ciface_pre_forward", "_mlir_ciface_clf_forward"):
        check(defined.count(name) == 1, f"{name} defined {defined.count(name)} times")
    check("kina_forward" not in defined, "unprefixed kina_forward exported")
    check(defined.count("kina_rt_begin_call") == 1,
          "the runtime is not linked exactly once")

    objs = {
        "pre": os.path.join(build, "kina_objects", "preprocess", "model.o"),
        "clf": os.path.join(build, "kina_objects", "classifier", "model.o"),
        "pre.h": os.path.join(build, "kina_include", "preprocess", "model.h"),
        "clf.h": os.path.join(build, "kina_include", "classifier", "model.h"),
    }
    for path in objs.values():
        check(os.path.isfile(path), f"missing {path}")

    def stamps():
        return {k: mtime(v) for k, v in objs.items()}

    # Nothing changed: nothing is recompiled.
    before = stamps()
    time.sleep(1.1)
    run([opts.cmake, "--build", build])
    check(stamps() == before, "a no-change build recompiled a module")

    # One module changed: only it is recompiled.
    touch(os.path.join(src, "preprocess", "model.kir"))
    run([opts.cmake, "--build", build])
    after = stamps()
    check(after["pre"] != before["pre"] and after["pre.h"] != before["pre.h"],
          "touching preprocess/model.kir did not recompile it")
    check(after["clf"] == before["clf"] and after["clf.h"] == before["clf.h"],
          "touching preprocess/model.kir recompiled classifier/model.kir")

    # A new kinac: everything is recompiled.
    before = after
    touch(os.path.join(prefix, "bin", "kinac"))
    run([opts.cmake, "--build", build])
    after = stamps()
    check(all(after[k] != before[k] for k in objs),
          "touching kinac did not recompile every module")
    out = run([os.path.join(build, "app")]).stdout
    check("cmake-project: ok" in out, "the rebuilt sample failed")

    # Configure errors.
    bad = fresh_dir(os.path.join(root, "bad"))
    with open(os.path.join(bad, "m.kir"), "w") as f:
        f.write(SCALE_KIR)
    targets = codegen_targets(prefix)
    cases = [
        ("TARGET gpu", r"TARGET must be cpu or cuda, not 'gpu'"),
        ("OPT_LEVEL 7", r"OPT_LEVEL must be 0, 1, 2 or 3"),
        ("GPU_ARCH sm_90", r"GPU_ARCH applies to TARGET cuda only"),
    ]
    if "cuda" not in targets:
        cases.append(("TARGET cuda",
                      r"TARGET cuda is not supported by this kinac"))
    for extra, message in cases:
        with open(os.path.join(bad, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.20)\n"
                    "project(bad LANGUAGES C)\n"
                    "find_package(Kina CONFIG REQUIRED)\n"
                    f"kina_add_library(m SOURCES m.kir {extra})\n")
        p = cmake_configure(opts, bad, os.path.join(bad, "build"), prefix,
                            expect=None)
        check(p.returncode != 0, f"'{extra}' configured")
        text = re.sub(r"\s+", " ", p.stderr)
        check(re.search(message, text), f"'{extra}': no '{message}' in:\n{p.stderr}")
        shutil.rmtree(os.path.join(bad, "build"))

    # TARGET cuda (when this kinac has it): configures, builds, and the
    # program links nothing CUDA; run here (no GPU needed) its entry returns
    # 3 with the reason, or 0 where a GPU is usable.
    if "cuda" in targets:
        gpu = fresh_dir(os.path.join(root, "cuda"))
        with open(os.path.join(gpu, "m.kir"), "w") as f:
            f.write(SCALE_KIR)
        with open(os.path.join(gpu, "main.c"), "w") as f:
            f.write(CUDA_MAIN)
        with open(os.path.join(gpu, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.20)\n"
                    "project(gpu LANGUAGES C)\n"
                    "find_package(Kina CONFIG REQUIRED)\n"
                    "kina_add_library(m SOURCES m.kir TARGET cuda "
                    "GPU_ARCH sm_90)\n"
                    "add_executable(app main.c)\n"
                    "target_link_libraries(app PRIVATE m)\n")
        build = os.path.join(gpu, "build")
        cmake_configure(opts, gpu, build, prefix)
        p = run([opts.cmake, "--build", build, "--verbose"])
        link = [l for l in p.stdout.splitlines() if " -o app" in l]
        check(link and not re.search(r"cuda|cudart", link[-1]),
              f"TARGET cuda: the link line names CUDA: {link}")
        needed = run(["readelf", "-d", os.path.join(build, "app")]).stdout
        check(not re.search(r"NEEDED.*(libcuda|libcudart)", needed),
              f"TARGET cuda: the program needs a CUDA library:\n{needed}")
        out = run([os.path.join(build, "app")], expect=None)
        print(out.stdout, end="")
        check(re.search(r"^cuda: (0 6\.0|3 .*(CUDA driver not found|no CUDA "
                        r"device))", out.stdout, re.M),
              f"TARGET cuda program printed: {out.stdout}{out.stderr}")
    print("cmake-project: ok")


# --- make-project ------------------------------------------------------------

def cmd_make_project(opts):
    root = fresh_dir(os.path.join(opts.work, "make-project"))
    src = os.path.join(root, "src")
    shutil.copytree(os.path.join(opts.source_dir, "samples", "make-project"),
                    src)
    kinac = os.path.join(prefix_dir(opts), "bin", "kinac")
    check(os.path.isfile(kinac), "no install tree (run integration.install)")
    make = ["make", f"KINAC={kinac}", f"CC={opts.cc}"]

    run(make + ["-j8"], cwd=src)
    out = run(["./app"], cwd=src).stdout
    print(out, end="")
    check("make-project: ok" in out, "the sample did not end with ok")

    with open(os.path.join(src, "normalize.o.d")) as f:
        dep = f.read()
    print(dep, end="")
    m = re.match(r"^normalize\.o: normalize\.kir \\\n  (\S+)\n$", dep)
    check(m, f"unexpected normalize.o.d:\n{dep}")
    check(os.path.realpath(m.group(1)) == os.path.realpath(kinac),
          f"normalize.o.d names {m.group(1)}, not {kinac}")
    check(os.path.isfile(os.path.join(src, "stats.h.d")), "no stats.h.d")

    def plan():
        """What make would run now (-n), as the .kir files it compiles."""
        p = run(make + ["-n"], cwd=src)
        return sorted(set(re.findall(r"(\w+\.kir) -o (\S+)", p.stdout)))

    run(make + ["-q"], cwd=src)  # exit 0: up to date
    touch(os.path.join(src, "stats.kir"))
    check(plan() == [("stats.kir", "stats.h"), ("stats.kir", "stats.o")],
          f"touching stats.kir plans {plan()}")
    run(make + ["-j8"], cwd=src)
    run(make + ["-q"], cwd=src)
    touch(kinac)
    check(plan() == [("normalize.kir", "normalize.h"),
                     ("normalize.kir", "normalize.o"),
                     ("stats.kir", "stats.h"), ("stats.kir", "stats.o")],
          f"touching kinac plans {plan()}")
    run(make + ["-j8"], cwd=src)
    run(make + ["-q"], cwd=src)
    out = run(["./app"], cwd=src).stdout
    check("make-project: ok" in out, "the rebuilt sample failed")

    # From scratch under a high -j, twice: the order is right every time.
    for _ in range(2):
        run(make + ["clean"], cwd=src)
        run(make + ["-j16", "app"], cwd=src)
        check("make-project: ok" in run(["./app"], cwd=src).stdout,
              "make -j16 from scratch failed")
    print("make-project: ok")


# --- depfile -----------------------------------------------------------------

def cmd_depfile(opts):
    work = fresh_dir(os.path.join(opts.work, "depfile"))
    sub = os.path.join(work, "dir with space")
    os.makedirs(sub)
    with open(os.path.join(sub, "m.kir"), "w") as f:
        f.write(SCALE_KIR)
    kinac = os.path.realpath(opts.kinac)

    # Default file and target: the output with .d.
    run([opts.kinac, "dir with space/m.kir", "-MD", "-o", "out/m.o"],
        cwd=work, expect=1)  # out/ does not exist: kinac fails, no .d
    check(not os.path.exists(os.path.join(work, "out", "m.d")), "stray .d")
    os.makedirs(os.path.join(work, "out"))
    run([opts.kinac, "dir with space/m.kir", "-MD", "-o", "out/m.o"], cwd=work)
    with open(os.path.join(work, "out", "m.d")) as f:
        text = f.read()
    want = f"out/m.o: dir\\ with\\ space/m.kir \\\n  {kinac}\n"
    check(text == want, f"m.d is {text!r}, expected {want!r}")

    # -MF, two -MT (attached and separate), -MP, and a header output.
    run([opts.kinac, "dir with space/m.kir", "--emit=header", "-o", "m.h",
         "-MD", "-MFdeps/h.d", "-MT", "m.h", "-MTstamp$1"], cwd=work,
        expect=1)  # deps/ does not exist
    os.makedirs(os.path.join(work, "deps"))
    run([opts.kinac, "dir with space/m.kir", "--emit=header", "-o", "m.h",
         "-MMD", "-MFdeps/h.d", "-MT", "m.h", "-MTstamp$1", "-MP"], cwd=work)
    with open(os.path.join(work, "deps", "h.d")) as f:
        text = f.read()
    want = (f"m.h stamp$$1: dir\\ with\\ space/m.kir \\\n  {kinac}\n"
            f"\n{kinac}:\n")
    check(text == want, f"h.d is {text!r}, expected {want!r}")

    # Make reads it: the target is up to date, then stale after a touch.
    with open(os.path.join(work, "Makefile"), "w") as f:
        f.write("include deps/h.d\nm.h:\n\techo rebuild\n")
    out = run(["make", "-q", "m.h"], cwd=work, expect=None)
    check(out.returncode == 0, "make thinks m.h is stale")
    touch(os.path.join(sub, "m.kir"))
    out = run(["make", "-q", "m.h"], cwd=work, expect=None)
    check(out.returncode == 1, "make thinks m.h is up to date after a touch")

    # Errors.
    for args, message in [
        (["-MF", "x.d"], "-MF, -MT and -MP need -MD"),
        (["-MD", "-MF"], "-MF needs a value"),
        (["-MD", "-o", "-", "--emit=kir"], "needs -MF"),
        (["-MD", "main.c"], "-MD applies to the compilation of one .kir"),
    ]:
        p = run([opts.kinac, "dir with space/m.kir"] + args, cwd=work,
                expect=1)
        check(f"kinac: error: " in p.stderr and message in p.stderr,
              f"{args}: no '{message}' in {p.stderr!r}")
    print("depfile: ok")


# --- determinism -------------------------------------------------------------

STAGES = ["kir", "mlir", "mlir-llvm", "llvm", "asm", "obj", "header"]


def cmd_determinism(opts):
    root = fresh_dir(os.path.join(opts.work, "determinism"))
    sources = {
        "mlp": os.path.join(opts.source_dir, "samples", "digits", "mlp.kir"),
        "clf": os.path.join(opts.source_dir, "samples", "cmake-project",
                            "classifier", "model.kir"),
        # Constants in three functions: MLIR 22's bufferization ordered
        # their globals by the functions' addresses, differently from run
        # to run (src/passes/workarounds/ConstantGlobalOrder.cpp).
        "constants": os.path.join(opts.source_dir, "tests", "filecheck",
                                  "cuda_constant_result.kir"),
    }
    flag_sets = [[], ["-O0", "--symbol-prefix=p_"],
                 ["--mlir-print-debuginfo"]]
    # Two places, different working and temporary directories; the module is
    # given by a relative path in the first and an absolute one in the second.
    places = []
    for name in ("first-place", "second/place-2"):
        d = fresh_dir(os.path.join(root, name))
        os.makedirs(os.path.join(d, "tmp"))
        places.append(d)
    outputs = []
    for i, d in enumerate(places):
        results = {}
        for key, path in sources.items():
            local = os.path.join(d, key + ".kir")
            shutil.copyfile(path, local)
            given = key + ".kir" if i == 0 else local
            for flags in flag_sets:
                for stage in STAGES:
                    if stage == "kir" and flags:
                        continue
                    if flags == ["--mlir-print-debuginfo"] and \
                            stage not in ("mlir", "mlir-llvm"):
                        continue
                    out = os.path.join(d, "out.bin")
                    env = dict(os.environ, TMPDIR=os.path.join(d, "tmp"))
                    run([opts.kinac, given, f"--emit={stage}", "-o", out]
                        + flags, cwd=d, env=env)
                    with open(out, "rb") as f:
                        results[(key, stage, tuple(flags))] = f.read()
        outputs.append(results)
    # A second run in the first place, for run-to-run differences.
    again = {}
    d = places[0]
    for key in sources:
        for stage in ("obj", "header", "llvm"):
            out = os.path.join(d, "again.bin")
            run([opts.kinac, key + ".kir", f"--emit={stage}", "-o", out],
                cwd=d)
            with open(out, "rb") as f:
                again[(key, stage, ())] = f.read()

    checked = 0
    for k, data in outputs[0].items():
        if k[2] == ("--mlir-print-debuginfo",):
            # Locations name the input as given; compare with the path
            # spelled the same way.
            other = outputs[1][k].replace(
                places[1].encode() + b"/", b"")
            check(data == other, f"{k}: differs between the two places")
        else:
            check(data == outputs[1][k], f"{k}: differs between the two places")
        if k in again:
            check(data == again[k], f"{k}: differs between two runs")
        for needle in (root, "first-place", "place-2", "/tmp"):
            check(needle.encode() not in data,
                  f"{k}: the output contains '{needle}'")
        # kinac's temporary files: kinac-XXXXXX.ll and OUT.tmp-XXXXXXXX.
        m = re.search(rb"kinac-[0-9A-Za-z]{6}\.|\.tmp-[0-9A-Za-z]{8}", data)
        check(not m, f"{k}: the output names a temporary file: {m and m.group(0)}")
        checked += 1
    print(f"determinism: {checked} outputs identical across places and runs")


# --- version -----------------------------------------------------------------

VERSION_MAIN = r"""#include "scale.h"
#include <stdio.h>
#include <string.h>
int main(void) {
  float x[2] = {1.0f, 2.0f};
  KinaMemRef1 in = {x, x, 0, {2}, {1}}, out;
  for (int i = 0; i < 3; ++i) {
    int32_t s = kina_scale(&out, &in);
    printf("status %d: %s\n", s, kina_last_error());
    if (s == 0) {
      if (((float *)out.aligned)[1] != 6.0f) return 2;
      runtime_free(out.allocated);
    } else if (out.allocated != NULL) {
      return 3;
    }
  }
  return 0;
}
"""


def cmd_version(opts):
    work = fresh_dir(os.path.join(opts.work, "version"))
    version = version_of(opts.kinac)
    with open(os.path.join(work, "scale.kir"), "w") as f:
        f.write(SCALE_KIR)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(VERSION_MAIN)
    run([opts.kinac, "scale.kir", "--emit=header", "-o", "scale.h"], cwd=work)
    with open(os.path.join(work, "scale.h")) as f:
        header = f.read()
    m = re.search(r"#define KINA_ABI_VERSION (\d+)", header)
    check(m, "the generated header has no KINA_ABI_VERSION")
    abi = int(m.group(1))
    link = run([opts.kinac, "--print-link-flags"]).stdout.split()
    for tested, expected in ((abi, 0), (abi + 98, 1)):
        obj = f"scale{tested}.o"
        run([opts.kinac, "scale.kir", f"--abi-version-for-testing={tested}",
             "-o", obj], cwd=work)
        with open(os.path.join(work, obj), "rb") as f:
            data = f.read()
        stamp = f"kinac {version}, Kina ABI {tested}".encode()
        check(stamp in data, f"{obj} does not hold the stamp '{stamp}'")
        exe = f"app{tested}"
        run([opts.cc, "-std=c99", "main.c", obj] + link + ["-o", exe],
            cwd=work)
        out = run([f"./{exe}"], cwd=work).stdout
        print(out, end="")
        lines = out.splitlines()
        check(len(lines) == 3, f"expected 3 calls, got {out!r}")
        for line in lines:
            check(line.startswith(f"status {expected}:"),
                  f"ABI {tested}: '{line}', expected status {expected}")
            if expected:
                for part in (f"kina_scale: this object was compiled by kinac "
                             f"{version}, Kina ABI {tested}",
                             f"from kinac {version} (Kina ABI {abi})",
                             "recompile"):
                    check(part in line, f"no '{part}' in '{line}'")
    print("version: ok")


# --- modules -----------------------------------------------------------------

MODEL_A = """func @forward(%x: f32[N]) -> f32[N] {
  %y = call @helper(%x)
  return %y
}

private func @helper(%x: f32[N]) -> f32[N] {
  %y = add %x, 1.0
  return %y
}
"""

MODEL_B = """func @forward(%x: f32[N]) -> f32[N] {
  %y = call @helper(%x)
  return %y
}

private func @helper(%x: f32[N]) -> f32[N] {
  %y = mul %x, 10.0
  return %y
}
"""

MODULES_MAIN = r"""#include "a/model.h"
#include "b/model.h"
#include "c/model.h"
#include "d/model.h"
#include <stdio.h>
int main(void) {
  float x[2] = {1.0f, 2.0f};
  KinaMemRef1 in = {x, x, 0, {2}, {1}}, ya, yb, yc, yd;
  if (kina_a_forward(&ya, &in) || kina_b_forward(&yb, &in) ||
      kina_encode(&yc, &in) || kina_decode(&yd, &in)) {
    printf("error: %s\n", kina_last_error());
    return 1;
  }
  printf("%g %g %g %g %g %g %g %g\n", ((float *)ya.aligned)[0],
         ((float *)ya.aligned)[1], ((float *)yb.aligned)[0],
         ((float *)yb.aligned)[1], ((float *)yc.aligned)[0],
         ((float *)yc.aligned)[1], ((float *)yd.aligned)[0],
         ((float *)yd.aligned)[1]);
  runtime_gpu_free_all();
  return 0;
}
"""


def cmd_modules(opts):
    work = fresh_dir(os.path.join(opts.work, "modules"))
    modules = {
        "a": (MODEL_A, ["--symbol-prefix=a_"]),
        "b": (MODEL_B, ["--symbol-prefix=b_"]),
        # Same module name, no prefix, different functions.
        "c": ("func @encode(%x: f32[N]) -> f32[N] {\n  %y = neg %x\n"
              "  return %y\n}\n", []),
        "d": ("func @decode(%x: f32[N]) -> f32[N] {\n  %y = abs %x\n"
              "  return %y\n}\n", []),
    }
    objects = []
    guards = {}
    for d, (text, flags) in modules.items():
        os.makedirs(os.path.join(work, d))
        with open(os.path.join(work, d, "model.kir"), "w") as f:
            f.write(text)
        run([opts.kinac, f"{d}/model.kir", "-o", f"{d}/model.o"] + flags,
            cwd=work)
        run([opts.kinac, f"{d}/model.kir", "--emit=header", "-o",
             f"{d}/model.h"] + flags, cwd=work)
        with open(os.path.join(work, d, "model.h")) as f:
            guards[d] = re.search(r"#ifndef (KINA_GENERATED_\w+)",
                                  f.read()).group(1)
        objects.append(f"{d}/model.o")
    print("include guards:", guards)
    check(len(set(guards.values())) == 4, f"include guards collide: {guards}")
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(MODULES_MAIN)
    link = run([opts.kinac, "--print-link-flags"]).stdout.split()
    check(sum(1 for a in link if "kina_runtime" in a) == 1,
          f"the runtime is not in the link flags once: {link}")
    run([opts.cc, "-std=c99", "-Wall", "-Werror", "-I.", "main.c"] + objects
        + link + ["-o", "app"], cwd=work)
    out = run(["./app"], cwd=work).stdout.split()
    check(out == ["2", "3", "10", "20", "-1", "-2", "1", "2"],
          f"wrong results {out}")
    print("modules: ok")


LINK_KIR = """func @twice(%x: f32[4]) -> f32[4] {
  %y = add %x, %x
  return %y
}
"""

LINK_MAIN = r"""#include <kina/runtime.h>
#include <stdio.h>
#include "config.h"
#include "m.h"
#ifndef FROM_D
#error -D did not arrive
#endif
#ifdef UNDEFINED_AGAIN
#error -U did not arrive
#endif
#if defined(EXPECT_OPTIMIZE) && !defined(__OPTIMIZE__)
#error the C file is compiled without optimisation
#endif
#if defined(EXPECT_NO_OPTIMIZE) && defined(__OPTIMIZE__)
#error the C file is compiled with optimisation
#endif
int extra_value(void);
int main(void) {
  float x[4] = {1, 2, 3, 4};
  KinaMemRef1 in = {x, x, 0, {4}, {1}};
  KinaMemRef1 out;
  int status = kina_twice(&out, &in);
  printf("%s %d %d %d %g\n", kina_status_name(status), CONFIG_VALUE, FROM_D,
         extra_value(), ((float *)out.aligned)[3]);
  runtime_free(out.allocated);
  return status;
}
"""


def cmd_link_flags(opts):
    work = fresh_dir(os.path.join(opts.work, "link-flags"))
    for d in ("inc", "lib", "inc2", "lib2"):
        os.makedirs(os.path.join(work, d))
    with open(os.path.join(work, "m.kir"), "w") as f:
        f.write(LINK_KIR)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(LINK_MAIN)
    with open(os.path.join(work, "inc", "config.h"), "w") as f:
        f.write("#define CONFIG_VALUE 7\n")
    with open(os.path.join(work, "inc2", "config.h"), "w") as f:
        f.write("#define CONFIG_VALUE 8\n")
    # Two static libraries defining extra_value(), -l'd from -L folders.
    for d, value in (("lib", 42), ("lib2", 43)):
        src = os.path.join(work, d, "extra.c")
        with open(src, "w") as f:
            f.write(f"int extra_value(void) {{ return {value}; }}\n")
        run([opts.cc, "-c", src, "-o", os.path.join(work, d, "extra.o")])
        run(["ar", "rcs", os.path.join(work, d, "libextra.a"),
             os.path.join(work, d, "extra.o")])
    env = {k: v for k, v in os.environ.items()
           if k not in ("CPPFLAGS", "CFLAGS", "LDFLAGS", "LDLIBS")}

    # Separate forms, -Xlinker, -std/-W/-f/-m, an optimised C compile.
    p = run([opts.kinac, "m.kir", "main.c", "-I", "inc", "-D", "FROM_D=5",
             "-DUNDEFINED_AGAIN", "-U", "UNDEFINED_AGAIN", "-L", "lib",
             "-l", "extra", "-DEXPECT_OPTIMIZE", "-std=c99", "-Wall",
             "-Werror", "-fno-common", "-m64", "--mcpu=x86-64",
             "-Xlinker", "-Map=app1.map", "-o", "app1"], cwd=work, env=env)
    out = run(["./app1"], cwd=work).stdout.split()
    check(out == ["Success", "7", "5", "42", "8"], f"app1 printed {out}")
    check(os.path.isfile(os.path.join(work, "app1.map")),
          "-Xlinker -Map=app1.map wrote no map")
    # Joined forms, -Wl, and -Xcompiler, -O0 reaching the C compile.
    run([opts.kinac, "m.kir", "main.c", "-Iinc", "-DFROM_D=6", "-Llib",
         "-lextra", "-O0", "-DEXPECT_NO_OPTIMIZE", "-Xcompiler", "-Wextra",
         "-Wl,-Map,app2.map", "-o", "app2"], cwd=work, env=env)
    out = run(["./app2"], cwd=work).stdout.split()
    check(out == ["Success", "7", "6", "42", "8"], f"app2 printed {out}")
    check(os.path.isfile(os.path.join(work, "app2.map")),
          "-Wl,-Map,app2.map wrote no map")
    # The environment: CPPFLAGS, CFLAGS, LDFLAGS (before the command line's
    # flags, so -Iinc2 from CFLAGS is searched after nothing else), LDLIBS.
    env3 = dict(env, CPPFLAGS="-DFROM_D=9", CFLAGS="-Iinc2 -DEXPECT_OPTIMIZE",
                LDFLAGS="-Llib2", LDLIBS="-lextra")
    p = run([opts.kinac, "-v", "m.kir", "main.c", "-o", "app3"], cwd=work,
            env=env3)
    out = run(["./app3"], cwd=work).stdout.split()
    check(out == ["Success", "8", "9", "43", "8"], f"app3 printed {out}")
    cc_line = [l for l in p.stderr.splitlines() if "main.c" in l]
    check(cc_line and " -O2 -DFROM_D=9 -Iinc2 " in cc_line[0],
          f"expected the default -O2 before $CPPFLAGS $CFLAGS: {cc_line}")
    # $CFLAGS' -O1 overrides the default level, an explicit -O3 overrides it.
    for flags, level in (([], "-O1"), (["-O3"], "-O3")):
        p = run([opts.kinac, "-v", "m.kir", "main.c", "-o", "app4"] + flags,
                cwd=work, env=dict(env3, CFLAGS="-O1 -Iinc2"))
        cc_line = [l for l in p.stderr.splitlines() if "main.c" in l][0]
        levels = re.findall(r" (-O\d)", cc_line)
        check(levels[-1] == level, f"expected {level} to decide: {cc_line}")

    # No link: the C flags are unused, a warning as clang gives, exit 0.
    p = run([opts.kinac, "m.kir", "-lm", "-I", "inc", "-o", "m.o"], cwd=work,
            env=env)
    check("kinac: warning: argument unused during compilation: '-lm'"
          in p.stderr and "'-I inc'" in p.stderr, f"no warning:\n{p.stderr}")
    check(os.path.isfile(os.path.join(work, "m.o")), "no object written")

    # Bad flags: clear errors, exit 1, nothing written.
    for args, needle in (
            (["--frobnicate"], "--frobnicate"),
            (["-Q"], "-Q"),
            (["-I"], "argument to '-I' is missing"),
            (["-Xcompiler"], "argument to '-Xcompiler' is missing")):
        p = run([opts.kinac, "m.kir", "main.c", "-o", "bad"] + args, cwd=work,
                env=env, expect=1)
        check(p.stderr.startswith("kinac: error: ") and needle in p.stderr,
              f"{args}: unclear error:\n{p.stderr}")
        check(not os.path.exists(os.path.join(work, "bad")),
              f"{args}: an output was written")
    print("link-flags: ok")


# --- multiversion -------------------------------------------------------------

MV_KIR = """module @mv
func @f(%x: f32[N, 16], %w: f32[16, 8]) -> f32[N, 8] {
  %m = matmul %x, %w
  %t = tanh %m
  %e = exp %t
  %s = softmax %e {axis = -1}
  return %s
}
"""

# Calls kina_f on fixed inputs and prints the result's bits, then which
# version kina_f's dispatcher chose: the offset (in the file holding
# kina_f) of the pointer in its slot `kina_f.kina.version`, given the
# offsets of kina_f and of the slot that nm reads from that file.
MV_MAIN = r"""#include <kina/runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mv.h"
int main(int argc, char **argv) {
  enum { N = 37, K = 16, M = 8 };
  static float x[N * K], w[K * M];
  for (int i = 0; i < N * K; ++i) x[i] = (float)(i * 37 % 101 - 50) / 25.0f;
  for (int i = 0; i < K * M; ++i) w[i] = (float)(i * 13 % 29 - 14) / 10.0f;
  KinaMemRef2 in = {x, x, 0, {N, K}, {K, 1}};
  KinaMemRef2 wt = {w, w, 0, {K, M}, {M, 1}};
  KinaMemRef2 out;
  int status = kina_f(&out, &in, &wt);
  if (status) {
    fprintf(stderr, "%s\n", kina_last_error());
    return 1;
  }
  const float *r = (const float *)out.aligned + out.offset;
  for (int i = 0; i < N * M; ++i) {
    uint32_t bits;
    memcpy(&bits, &r[i], 4);
    printf("%08x\n", (unsigned)bits);
  }
  runtime_free(out.allocated);
  if (argc == 3) {
    uintptr_t base = (uintptr_t)(void *)kina_f - strtoull(argv[1], 0, 16);
    void *chosen = *(void *const *)(base + strtoull(argv[2], 0, 16));
    printf("version %llx\n", (unsigned long long)((uintptr_t)chosen - base));
  }
  return 0;
}
"""

MV_LEVELS = ["x86_64", "x86_64_v3", "x86_64_v4"]


def host_version():
    """The version kina_f should run here: the best of MV_LEVELS whose
    features /proc/cpuinfo lists (Linux lists AVX and AVX-512 only when
    it saves their registers)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    v3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe",
          "xsave", "cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3",
          "pni"}
    v4 = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    if v3 <= flags:
        return "x86_64_v4" if v4 <= flags else "x86_64_v3"
    return "x86_64"


def nm_symbols(path):
    """{name: (type letter, value)} of the symbol table of `path`."""
    out = run(["nm", path]).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = (parts[1], int(parts[0], 16))
        elif len(parts) == 2:  # undefined: no value
            table[parts[1]] = (parts[0], None)
    return table


def cmd_multiversion(opts):
    work = fresh_dir(os.path.join(opts.work, "multiversion"))
    with open(os.path.join(work, "mv.kir"), "w") as f:
        f.write(MV_KIR)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(MV_MAIN)
    kinac = opts.kinac
    run([kinac, "mv.kir", "--emit=header", "-o", "mv.h"], cwd=work)

    # The default object: a local version per level, the exported symbol
    # a dispatcher asking the runtime for the level.
    run([kinac, "mv.kir", "-o", "mv.o"], cwd=work)
    syms = nm_symbols(os.path.join(work, "mv.o"))
    for level in MV_LEVELS:
        check(syms.get("kina_f." + level, ("",))[0] == "t",
              f"no local kina_f.{level} in the default object: {syms}")
    check(syms.get("kina_f", ("",))[0] == "T", "kina_f is not exported")
    check(syms.get("kina_rt_cpu_level", ("",))[0] == "U",
          "the default object does not call kina_rt_cpu_level")
    ll = run([kinac, "mv.kir", "--emit=llvm", "-o", "-"], cwd=work).stdout
    check(re.search(r"musttail call .* %version\(", ll),
          "--emit=llvm shows no dispatcher")
    for cpu in ("x86-64", "x86-64-v3", "x86-64-v4"):
        check(f'"target-cpu"="{cpu}"' in ll, f"--emit=llvm: no {cpu} version")
    asm = run([kinac, "mv.kir", "--emit=asm", "-o", "-"], cwd=work).stdout
    check("kina_f.x86_64_v4:" in asm and "kina_rt_cpu_level" in asm,
          "--emit=asm shows no versions")
    # --mcpu pins one version; -O0 stays single-version.
    for flags in (["--mcpu=x86-64-v3"], ["--mcpu=native"], ["-O0"]):
        run([kinac, "mv.kir", "-o", "one.o"] + flags, cwd=work)
        one = nm_symbols(os.path.join(work, "one.o"))
        check(not any(n.startswith("kina_f.x86_64") for n in one)
              and "kina_rt_cpu_level" not in one,
              f"{flags}: the object is multiversioned: {sorted(one)}")

    # Linked with only the runtime's flags; run at each level.
    flags = run([kinac, "--print-link-flags"]).stdout.split()
    include = os.path.join(opts.source_dir, "include")
    run([opts.cc, "-I", include, "-I", work, "main.c", "mv.o"] + flags +
        ["-o", "app"], cwd=work)
    # --emit=shared: the same dispatch inside a shared library.
    run([kinac, "mv.kir", "--emit=shared", "-o", "libmv.so"], cwd=work)
    run([opts.cc, "-I", include, "-I", work, "main.c", "libmv.so",
         "-Wl,-rpath," + work] + flags + ["-o", "app-so"], cwd=work)
    best = host_version()
    cases = [(None, best), ("x86-64", "x86_64"), ("x86-64-v2", "x86_64")]
    if best != "x86_64":
        cases.append(("x86-64-v3", "x86_64_v3"))
    if best == "x86_64_v4":
        cases.append(("x86-64-v4", "x86_64_v4"))
    outputs = {}
    for app, holder in (("app", "app"), ("app-so", "libmv.so")):
        table = nm_symbols(os.path.join(work, holder))
        by_value = {v: n for n, (t, v) in table.items()
                    if n.startswith("kina_f.x86_64")}
        for level, expect in cases:
            env = dict(os.environ)
            env.pop("KINA_CPU_LEVEL", None)
            if level:
                env["KINA_CPU_LEVEL"] = level
            out = run([os.path.join(work, app),
                       "%x" % table["kina_f"][1],
                       "%x" % table["kina_f.kina.version"][1]], cwd=work,
                      env=env).stdout.split("\n")
            chosen = by_value.get(int(out[-2].split()[1], 16))
            check(chosen == "kina_f." + expect,
                  f"{app} with KINA_CPU_LEVEL={level}: ran {chosen}, "
                  f"expected kina_f.{expect}")
            outputs[(app, level)] = out[:-2]
    # The same level gives the same bits in an object and a shared
    # library; across levels, the multiply-adds LLVM may fuse
    # (llvm.fmuladd) are fused where the level has FMA: agreement within
    # f32's tolerance class (docs/tolerances.md), bits identical at x86-64
    # and x86-64-v2 (the same version).
    def floats(out):
        return [struct.unpack("<f", bytes.fromhex(h)[::-1])[0] for h in out]
    for level, _ in cases:
        check(outputs[("app", level)] == outputs[("app-so", level)],
              f"KINA_CPU_LEVEL={level}: the object and the shared library "
              "differ")
    check(outputs[("app", "x86-64")] == outputs[("app", "x86-64-v2")],
          "x86-64 and x86-64-v2 ran the same version but differ")
    base = floats(outputs[("app", None)])
    for key, out in outputs.items():
        worst = max(abs(a - b) / max(1.0, abs(b))
                    for a, b in zip(floats(out), base))
        check(worst <= 1e-5, f"{key}: results differ from the best "
              f"version's by {worst:g}")
    # A level above the host's or an unknown name: a warning, the best
    # level the host has.
    bad = dict(os.environ, KINA_CPU_LEVEL="pentium")
    p = run([os.path.join(work, "app")], cwd=work, env=bad)
    check("KINA_CPU_LEVEL='pentium'" in p.stderr,
          f"no warning for an unknown level:\n{p.stderr}")
    print("multiversion: ok (host runs kina_f.%s)" % best)


THREADS_KIR = """module @par

func @mm(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {
  %c = matmul %a, %b
  return %c
}

func @sm(%x: f32[R, C]) -> f32[R, C] {
  %p = softmax %x
  return %p
}

func @ew(%x: f32[N]) -> f32[N] {
  %y = mul %x, 1.5
  %z = tanh %y
  %w = add %z, %x
  return %w
}

func @small(%x: f32[N]) -> f32[N] {
  %y = mul %x, 2.0
  return %y
}
"""

THREADS_MAIN = r"""#include "par.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>

/* Deterministic inputs in [-1, 1). */
static float *filled(size_t n, unsigned seed) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
  }
  return p;
}

/* FNV-1a over the result's bytes: equal hashes, equal bits. */
static unsigned long long hash(const float *p, size_t n) {
  unsigned long long h = 1469598103934665603ull;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n * sizeof(float); ++i)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

enum { M = 300, K = 200, N = 1000, R = 600, C = 999, E = 1 << 20 };
static float *a, *b, *x, *v;

/* One call of each function; prints (when `out`) each result's hash. */
static int call_all(int print) {
  KinaMemRef2 ma = {a, a, 0, {M, K}, {K, 1}}, mb = {b, b, 0, {K, N}, {N, 1}};
  KinaMemRef2 mx = {x, x, 0, {R, C}, {C, 1}}, mc, ms;
  KinaMemRef1 mv = {v, v, 0, {E}, {1}}, me, mt;
  KinaMemRef1 small = {v, v, 0, {64}, {1}};
  if (kina_mm(&mc, &ma, &mb) || kina_sm(&ms, &mx) || kina_ew(&me, &mv) ||
      kina_small(&mt, &small)) {
    printf("error: %s\n", kina_last_error());
    return 1;
  }
  if (print)
    printf("mm %016llx\nsm %016llx\new %016llx\nsmall %016llx\n",
           hash(mc.aligned, (size_t)M * N), hash(ms.aligned, (size_t)R * C),
           hash(me.aligned, E), hash(mt.aligned, 64));
  runtime_free(mc.allocated);
  runtime_free(ms.allocated);
  runtime_free(me.allocated);
  runtime_free(mt.allocated);
  return 0;
}

static void *caller(void *arg) {
  (void)arg;
  for (int i = 0; i < 3; ++i)
    if (call_all(0))
      return (void *)1;
  return NULL;
}

int main(int argc, char **argv) {
  a = filled((size_t)M * K, 1);
  b = filled((size_t)K * N, 2);
  x = filled((size_t)R * C, 3);
  v = filled(E, 4);
  if (argc > 1) { /* "concurrent": two threads calling at once */
    pthread_t t1, t2;
    void *r1, *r2;
    pthread_create(&t1, NULL, caller, NULL);
    pthread_create(&t2, NULL, caller, NULL);
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    if (r1 || r2)
      return 1;
  }
  uint64_t before = kina_rt_parallel_regions();
  if (call_all(1))
    return 1;
  printf("threads %d regions %llu\n", kina_rt_num_threads(),
         (unsigned long long)(kina_rt_parallel_regions() - before));
  uint64_t mid = kina_rt_parallel_regions();
  KinaMemRef1 small = {v, v, 0, {64}, {1}}, mt;
  if (kina_small(&mt, &small))
    return 1;
  runtime_free(mt.allocated);
  printf("small regions %llu\n",
         (unsigned long long)(kina_rt_parallel_regions() - mid));
  return runtime_live_buffer_count() != 0;
}
"""


def cmd_threads(opts):
    """The runtime's thread pool in compiled code (docs/integration.md,
    "Threads"): matmul, softmax and an elementwise chain give the same bits
    at KINA_NUM_THREADS=1 and 2, split into regions at 2 and not at 1, a
    small function never splits, two threads calling at once get correct
    results, -O0 never calls the pool, and the link needs only
    --print-link-flags."""
    work = fresh_dir(os.path.join(opts.work, "threads"))
    with open(os.path.join(work, "par.kir"), "w") as f:
        f.write(THREADS_KIR)
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write(THREADS_MAIN)
    kinac = opts.kinac
    flags = run([kinac, "--print-link-flags"]).stdout.split()
    include = os.path.join(opts.source_dir, "include")
    run([kinac, "par.kir", "--emit=header", "-o", "par.h"], cwd=work)
    results = {}
    for opt in ("-O2", "-O0"):
        obj = f"par{opt}.o"
        run([kinac, "par.kir", opt, "-o", obj], cwd=work)
        syms = nm_symbols(os.path.join(work, obj))
        calls_pool = "kina_rt_parallel_for" in syms
        check(calls_pool == (opt != "-O0"),
              f"{opt}: kina_rt_parallel_for referenced: {calls_pool}")
        app = f"app{opt}"
        run([opts.cc, "-I", include, "-I", work, "main.c", obj] + flags +
            ["-o", app], cwd=work)
        for threads in ("1", "2"):
            env = dict(os.environ, KINA_NUM_THREADS=threads)
            out = run([os.path.join(work, app)], cwd=work,
                      env=env).stdout.split("\n")
            stats = dict(zip(out[4].split()[::2], out[4].split()[1::2]))
            check(stats["threads"] == threads,
                  f"{app}: KINA_NUM_THREADS={threads} gave {out[4]}")
            regions = int(stats["regions"])
            if opt == "-O0" or threads == "1":
                check(regions == 0, f"{app} at {threads} thread(s) split "
                      f"{regions} loops")
            else:
                # mm: its slabs; sm: its one loop over rows
                # (kina-fuse-rows); ew: its loop.
                check(regions >= 3, f"{app} at 2 threads split only "
                      f"{regions} loops: {out}")
            check(out[5] == "small regions 0",
                  f"{app}: the 64-element function split: {out[5]}")
            results[(opt, threads)] = out[:4]
            env = dict(env)
            run([os.path.join(work, app), "concurrent"], cwd=work, env=env)
    check(results[("-O2", "1")] == results[("-O2", "2")],
          "-O2: results differ between 1 and 2 threads:\n"
          f"{results[('-O2', '1')]}\n{results[('-O2', '2')]}")
    print("threads: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=[
        "install", "cmake-project", "make-project", "depfile", "determinism",
        "version", "modules", "link-flags", "multiversion", "threads"])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--cmake", default="cmake")
    ap.add_argument("--generator", default="Unix Makefiles")
    ap.add_argument("--cc", default="cc")
    opts = ap.parse_args()
    opts.work = os.path.abspath(opts.work)
    os.makedirs(opts.work, exist_ok=True)
    handler = globals()["cmd_" + opts.command.replace("-", "_")]
    try:
        handler(opts)
    except Failure as e:
        print(f"FAIL {opts.command}: {e}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
