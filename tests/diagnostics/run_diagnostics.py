#!/usr/bin/env python3
"""Bad-input tests of kinac: every case must fail cleanly, with exact diagnostics.

Each `cases/*.kir` file holds its expected diagnostics in comments, in the
form of MLIR's -verify-diagnostics with a column added (docs/diagnostics.md):

    // expected-error@+1:8 {{unknown operation 'frobnicate'}}
    // expected-note@-2:3 {{previous definition of %y is here}}

(`@+N`/`@-N` relative to the annotation's line, `@N` absolute, none: the same
line; `:COL` is required here; the message is compared whole) and, if it
needs them, extra kinac flags in a `// flags: ...` line. For each case this
test checks, independently of one another:

  1. `kinac --verify-diagnostics` (kinac's own matcher) exits 0 and prints
     nothing;
  2. a normal run, once with no output file and once with an existing one,
     exits with status 1 (not a crash), prints every expected diagnostic as
     `FILE:LINE:COL: SEVERITY: MESSAGE` (errors followed by the source line
     and a caret under COL) and no other error, writes no output file,
     leaves the existing one byte for byte, and leaves no file beside it;
  3. `--diagnostics-format=json` prints exactly the expected diagnostics as
     JSON objects (file, line, col, severity, message, notes), exit 1.

The limit cases too large to commit (a 16 MiB file, a 64 KiB line, 10 000
statements in a function, 100 000 in a module, 1000 functions, 4096-entry
lists) are generated here with
their annotations and checked the same way. Driver-level errors (missing
files, bad flags, a missing C compiler, unwritable output...) have no place
in a source: they are checked as `kinac: error: ...` in text and as JSON
objects with null file, line and col. Verify mode itself is checked to fail
on a wrong column, a wrong message, a missing, an unexpected diagnostic and
a malformed annotation.

Usage: run_diagnostics.py --kinac PATH --workdir DIR
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SENTINEL = b"existing output, must survive\n"
MIN_CASES = 80
ANNOTATION = re.compile(
    r"expected-(error|warning|note|remark)(?:@([+-]?[0-9]+|above|below))?"
    r"(?::([0-9]+))?[ \t]*\{\{(.*)\}\}")
Expect = collections.namedtuple("Expect", "line col severity message")


def parse_annotations(path):
    """The expectations written in `path`, as Expect tuples (col required)."""
    expects, problems = [], []
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    for i, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "surrogateescape").rstrip("\r")
        at = text.find("expected-")
        if at < 0 or not re.match(r"expected-(error|warning|note|remark)",
                                  text[at:]):
            continue
        m = ANNOTATION.match(text[at:])
        if not m:
            problems.append(f"line {i}: malformed annotation: {text[at:]}")
            continue
        spec = m.group(2)
        if spec is None:
            line = i
        elif spec == "above":
            line = i - 1
        elif spec == "below":
            line = i + 1
        elif spec[0] in "+-":
            line = i + int(spec)
        else:
            line = int(spec)
        if m.group(3) is None:
            problems.append(f"line {i}: annotation without a column")
            continue
        expects.append(Expect(line, int(m.group(3)), m.group(1), m.group(4)))
    return expects, problems


def parse_flags(path):
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            m = re.match(r"\s*(?:#|//)\s*flags:\s*(.*)$",
                         raw.decode("utf-8", "replace"))
            if m:
                return m.group(1).split()
    return []


def run(kinac, args, cwd, env=None):
    p = subprocess.run([kinac] + args, capture_output=True, cwd=cwd,
                       timeout=300, env=env)
    return p.returncode, p.stderr.decode("utf-8", "surrogateescape")


def fresh_dir(workdir, name):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def check_outputs(case_dir, out, existing, problems):
    """No output written, an existing one untouched, nothing left beside."""
    if existing:
        with open(out, "rb") as f:
            if f.read() != SENTINEL:
                problems.append("existing output file was modified")
    elif os.path.exists(out):
        problems.append("an output file was written")
    leftovers = [f for f in os.listdir(case_dir) if f != "out.o"]
    if leftovers:
        problems.append(f"files left beside the output: {leftovers}")


def printable(line):
    """LLVM prints the caret under lines of printable ASCII only."""
    return all(c == "\t" or " " <= c <= "~" for c in line)


def check_text(err, path, source_lines, expects, problems):
    lines = err.splitlines()
    for e in expects:
        want = f"{path}:{e.line}:{e.col}: {e.severity}: {e.message}"
        hits = [i for i, l in enumerate(lines) if l == want]
        if not hits:
            problems.append(f"missing '{want}' in:\n{err}")
            continue
        if e.severity != "error":
            continue
        # The source line and a caret under the column (LLVM prints them
        # when the line is printable text).
        src = source_lines[e.line - 1] if e.line <= len(source_lines) else ""
        if not printable(src):
            continue
        i = hits[0]
        if i + 2 >= len(lines) or lines[i + 1] != src or \
                lines[i + 2].find("^") != e.col - 1:
            problems.append(f"no source line and caret at column {e.col} "
                            f"after '{want}':\n{err}")
    errors = [l for l in lines if l.startswith(f"{path}:") and ": error: " in l]
    want_errors = sum(1 for e in expects if e.severity == "error")
    if len(errors) != want_errors:
        problems.append(f"{len(errors)} errors printed, {want_errors} "
                        f"expected:\n{err}")


def check_json(err, path, expects, problems):
    got = []
    for line in err.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            problems.append(f"not a JSON line: {line!r}")
            return
        for obj in [j] + j.get("notes", []):
            missing = {"file", "line", "col", "severity", "message"} - set(obj)
            if missing:
                problems.append(f"JSON diagnostic without {missing}: {line}")
                return
            if obj["file"] != path:
                problems.append(f"JSON diagnostic names file {obj['file']!r}, "
                                f"expected {path!r}")
            got.append(Expect(obj["line"], obj["col"], obj["severity"],
                              obj["message"]))
        if "notes" not in j:
            problems.append(f"JSON diagnostic without notes: {line}")
    if collections.Counter(got) != collections.Counter(expects):
        problems.append("JSON diagnostics differ from the annotations:\n"
                        f"  got:      {sorted(got)}\n"
                        f"  expected: {sorted(expects)}")


def run_located_case(kinac, workdir, name, path, flags):
    """All checks of a source file with annotations; returns problems."""
    expects, problems = parse_annotations(path)
    if not any(e.severity == "error" for e in expects):
        problems.append("case has no expected-error annotation")
    if problems:
        return problems
    with open(path, "rb") as f:
        source_lines = f.read().decode("utf-8", "surrogateescape").split("\n")
    case_dir = fresh_dir(workdir, name)

    rc, err = run(kinac, ["--verify-diagnostics", path] + flags, case_dir)
    if rc != 0 or err:
        problems.append(f"--verify-diagnostics exit code {rc}, expected 0; "
                        f"stderr:\n{err}")

    out = os.path.join(case_dir, "out.o")
    for existing in (False, True):
        if existing:
            with open(out, "wb") as f:
                f.write(SENTINEL)
        rc, err = run(kinac, [path] + flags + ["-o", out], case_dir)
        if rc != 1:
            problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
        check_text(err, path, source_lines, expects, problems)
        check_outputs(case_dir, out, existing, problems)

    rc, err = run(kinac, ["--diagnostics-format=json", path] + flags +
                  ["-o", out], case_dir)
    if rc != 1:
        problems.append(f"JSON run: exit code {rc}, expected 1")
    check_json(err, path, expects, problems)
    check_outputs(case_dir, out, True, problems)
    return problems


def run_driver_case(kinac, workdir, name, args, needle, env=None,
                    add_output=True):
    """A driver-level error: `kinac: error: ...needle...`, exit 1, no
    output; and the same error as JSON with null file, line and col."""
    problems = []
    case_dir = fresh_dir(workdir, name)
    out = os.path.join(case_dir, "out.o")
    full_env = dict(os.environ, **(env or {}))
    for existing in (False, True):
        if existing:
            with open(out, "wb") as f:
                f.write(SENTINEL)
        extra = ["-o", out] if add_output else []
        rc, err = run(kinac, args + extra, case_dir, full_env)
        if rc != 1:
            problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
        first = err.splitlines()[0] if err else ""
        if not first.startswith("kinac: error: ") or needle not in first:
            problems.append(f"expected 'kinac: error: ...{needle}...' first, "
                            f"got:\n{err}")
        if add_output:
            check_outputs(case_dir, out, existing, problems)
    rc, err = run(kinac, ["--diagnostics-format=json"] + args +
                  (["-o", out] if add_output else []), case_dir, full_env)
    try:
        objs = [json.loads(l) for l in err.splitlines()]
    except ValueError:
        objs = []
    if rc != 1 or len(objs) != 1 or objs[0].get("file", 0) is not None or \
            objs[0].get("line", 0) is not None or \
            objs[0].get("col", 0) is not None or \
            objs[0].get("severity") != "error" or \
            needle not in objs[0].get("message", "") or \
            objs[0].get("notes") != []:
        problems.append(f"JSON form: exit code {rc}, expected one object with "
                        f"null file/line/col and '{needle}'; got:\n{err}")
    return problems


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def generated_limit_cases(gen):
    """(name, path) of the limit cases too large to commit."""
    head = "func @f(%x: f32[4]) -> f32[4] {\n"
    cases = []
    # A file one byte above 16 MiB (made of comment lines below the line
    # limit), with the error at 1:1.
    body = ("// expected-error@1:1 {{the file is 16777217 bytes long, above "
            "the maximum of 16777216 bytes (16 MiB)}}\n" + head +
            "  return %x\n}\n")
    filler = 16 * 1024 * 1024 + 1 - len(body)
    comment = "#" + "x" * 998 + "\n"
    text = body + comment * (filler // 1000)
    text += "#" * (filler - len(comment) * (filler // 1000))
    assert len(text) == 16 * 1024 * 1024 + 1
    cases.append(("limit-file-size", write(os.path.join(gen, "big.kir"), text)))
    # A line of 65537 bytes (a comment) on line 3.
    text = ("// expected-error@+2:65537 {{line 3 is 65537 bytes long, above "
            "the maximum of 65536 bytes (a dense<...> literal may span "
            "lines)}}\n" + head + "#" * 65537 + "\n  return %x\n}\n")
    cases.append(("limit-line-length",
                  write(os.path.join(gen, "long-line.kir"), text)))
    # 10 001 statements in one function.
    stmts = "".join(f"  %v{i} = neg %x\n" for i in range(10000))
    text = (head + stmts + "// expected-error@+1:3 {{@f has more than 10000 "
            "statements, the maximum per function}}\n  %last = neg %x\n"
            "  return %x\n}\n")
    cases.append(("limit-statements",
                  write(os.path.join(gen, "statements.kir"), text)))
    # 100 001 statements in a module: ten functions of 10 000, one more.
    fns = "".join(f"func @f{k}(%x: f32[4]) -> f32[4] {{\n" + stmts +
                  "  return %x\n}\n" for k in range(10))
    text = (fns + head + "// expected-error@+1:3 {{the module has more than "
            "100000 statements, the maximum per module}}\n  %last = neg %x\n"
            "  return %x\n}\n")
    cases.append(("limit-module-statements",
                  write(os.path.join(gen, "module-statements.kir"), text)))
    # 1001 functions.
    fns = "".join(f"func @f{i}(%x: f32[4]) -> f32[4] {{\n  return %x\n}}\n"
                  for i in range(1000))
    text = (fns + "// expected-error@+1:1 {{the module has more than 1000 "
            "functions, the maximum}}\nfunc @g(%x: f32[4]) -> f32[4] {\n"
            "  return %x\n}\n")
    cases.append(("limit-functions",
                  write(os.path.join(gen, "functions.kir"), text)))
    # 4097 parameters, one per line; the error is at the last one.
    params = ",\n".join(f"  %p{i}: f32" for i in range(4096))
    text = ("func @f(\n" + params + ",\n// expected-error@+1:3 {{the parameter "
            "list of @f has more than 4096 entries, the maximum}}\n"
            "  %p4096: f32) -> f32 {\n  return %p0\n}\n")
    cases.append(("limit-parameters",
                  write(os.path.join(gen, "parameters.kir"), text)))
    # 4097 operands of one concat (one line of about 16 KiB).
    col = len("  %y = concat ") + 4096 * len("%x, ") + 1
    text = (head + f"// expected-error@+1:{col} {{{{the operand list of "
            "'concat' has more than 4096 entries, the maximum}}\n"
            "  %y = concat " + ", ".join(["%x"] * 4097) +
            "\n  return %x\n}\n")
    cases.append(("limit-operands",
                  write(os.path.join(gen, "operands.kir"), text)))
    # The other 4097-entry lists, each on one line (under 64 KiB).
    many = lambda item, n=4097: ", ".join([item] * n)
    lists = [
        ("result-types", "func @f(%x: f32) -> (" + many("f32") + ") {\n"
         "  return %x\n}\n", "the result types of @f",
         len("func @f(%x: f32) -> (") + 4096 * len("f32, ") + 1),
        ("result-names", "func @f(%x: f32) -> f32 {\n  " +
         ", ".join(f"%r{i}" for i in range(4097)) + " = neg %x\n"
         "  return %x\n}\n", "the result names of a statement",
         3 + sum(len(f"%r{i}, ") for i in range(4096))),
        ("call-arguments", "func @g(%x: f32) -> f32 {\n  return %x\n}\n"
         "func @f(%x: f32) -> f32 {\n  %y = call @g(" + many("%x") +
         ")\n  return %y\n}\n", "the argument list of a call",
         len("  %y = call @g(") + 4096 * len("%x, ") + 1),
        ("return-values", "func @f(%x: f32) -> f32 {\n  return " +
         many("%x") + "\n}\n", "the 'return' list",
         len("  return ") + 4096 * len("%x, ") + 1),
        ("annotation-types", "func @f(%x: f32) -> f32 {\n  %y = neg %x : (" +
         many("f32") + ")\n  return %y\n}\n", "the annotation",
         len("  %y = neg %x : (") + 4096 * len("f32, ") + 1),
        ("attribute-list", "func @f(%x: f32[4]) -> f32 {\n"
         "  %y = reduce_sum %x {axes = [" + many("0") + "]}\n"
         "  return %y\n}\n", "an attribute list",
         len("  %y = reduce_sum %x {axes = [") + 4096 * len("0, ") + 1),
    ]
    for name, text, what, col in lists:
        # The error is on the line of the long list: line 2, or line 4 for
        # the call (after @g).
        lines = text.split("\n")
        at = next(i for i, l in enumerate(lines) if len(l) > 4000)
        lines.insert(at, f"// expected-error@+1:{col} {{{{{what} has more "
                     "than 4096 entries, the maximum}}")
        cases.append((f"limit-{name}", write(os.path.join(gen, name + ".kir"),
                                             "\n".join(lines))))
    return cases


def output_is_input_cases(kinac, workdir, good, main_c):
    """`-o` naming an input (or -MF naming it) is an error that leaves the
    input as it was, for a compilation and for a link."""
    results = []
    for name, extra in (("output-is-input", []),
                        ("link-output-is-input", [main_c]),
                        ("dep-file-is-input", ["-MD", "-MF", "@IN"])):
        problems = []
        d = fresh_dir(workdir, name)
        src = os.path.join(d, "model.kir")
        shutil.copyfile(good, src)
        with open(src, "rb") as f:
            before = f.read()
        cargs = [src] + [src if a == "@IN" else a for a in extra]
        out = os.path.join(d, "out.o") if "@IN" in extra else src
        rc, err = run(kinac, cargs + ["-o", out], d)
        needle = f"kinac: error: input file '{src}' is the same as output file"
        if rc != 1 or not err.startswith(needle):
            problems.append(f"exit code {rc}, expected 1 and '{needle}'; "
                            f"got:\n{err}")
        with open(src, "rb") as f:
            if f.read() != before:
                problems.append("the input file was changed")
        if sorted(os.listdir(d)) != ["model.kir"]:
            problems.append(f"files left behind: {sorted(os.listdir(d))}")
        results.append((name, problems))
    return results


def fifo_output(kinac, workdir, name, args, files, expected, timeout,
                at_start=False):
    """kinac `args` -o a FIFO (with `files` written first): exit 0, the FIFO
    still a FIFO, its reader got bytes holding `expected` (starting with it,
    if `at_start`), nothing else left in the directory."""
    d = fresh_dir(workdir, name)
    for f, text in files.items():
        write(os.path.join(d, f), text)
    fifo = os.path.join(d, "out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(
        target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    rc, err = run(kinac, args + ["-o", fifo], d)
    reader.join(timeout=timeout)
    problems = [] if rc == 0 else [f"exit code {rc}:\n{err}"]
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        problems.append("the FIFO was replaced by another kind of file")
    if not got or not (got[0].startswith(expected) if at_start
                       else expected in got[0]):
        problems.append(f"the reader did not get {expected!r}")
    left = sorted(set(os.listdir(d)) - set(files) - {"out.fifo"})
    if left:
        problems.append(f"files left behind: {left}")
    return problems


def special_output_cases(kinac, workdir, good):
    """Outputs that are not regular files: a FIFO is written into and stays a
    FIFO (as `-o /dev/null` must leave /dev/null alone); a symbolic link is
    followed, its target replaced and the link kept; a directory is an
    error."""
    results = [
        ("fifo-output", fifo_output(kinac, workdir, "fifo-output",
                                    [good, "--emit=mlir"], {},
                                    b"func.func @forward", 60)),
        # Link mode into a FIFO: the executable's bytes go into it.
        ("fifo-link-output", fifo_output(
            kinac, workdir, "fifo-link-output", [good, "main.c"],
            {"main.c": "int main(void) { return 0; }\n"}, b"\x7fELF", 120,
            at_start=True)),
    ]

    d = fresh_dir(workdir, "symlink-output")
    target = write(os.path.join(d, "real.o"), SENTINEL)
    link = os.path.join(d, "link.o")
    os.symlink("real.o", link)
    rc, err = run(kinac, [good, "-o", link], d)
    problems = [] if rc == 0 else [f"exit code {rc}:\n{err}"]
    if not os.path.islink(link):
        problems.append("the symbolic link was replaced")
    with open(target, "rb") as f:
        if not f.read().startswith(b"\x7fELF"):
            problems.append("the link's target is not the new object")
    if sorted(os.listdir(d)) != ["link.o", "real.o"]:
        problems.append(f"files left behind: {sorted(os.listdir(d))}")
    results.append(("symlink-output", problems))

    d = fresh_dir(workdir, "directory-output-target")
    out_dir = os.path.join(d, "out.o")
    os.makedirs(out_dir)
    results.append(("directory-output", run_driver_case(
        kinac, workdir, "directory-output", [good, "-o", out_dir],
        f"cannot write '{out_dir}': Is a directory", add_output=False)))
    return results


def non_ascii_display(kinac, workdir):
    """A source line holding non-ASCII bytes (invalid UTF-8 here) is shown
    with '?' for each such byte and still gets its caret."""
    d = fresh_dir(workdir, "non-ascii-source-line")
    src = write(os.path.join(d, "latin1.kir"),
                b"func @f(%x: f32[4]) -> f32[4] {\n"
                b"  %y = relu %x # caf\xe9 cr\xc3\xa8me\n  return %y\n}\n")
    rc, err = run(kinac, [src, "-o", os.path.join(d, "out.o")], d)
    want = (f"{src}:2:21: error: invalid UTF-8 (byte 0xE9)\n"
            "  %y = relu %x # caf? cr??me\n"
            "                    ^\n")
    if rc != 1 or not err.startswith(want):
        return [f"exit code {rc}, expected 1 and\n{want}got:\n{err}"]
    return []


def verify_mode_self_tests(kinac, workdir):
    """--verify-diagnostics must fail, saying why, when annotations and
    diagnostics differ."""
    results = []
    d = fresh_dir(workdir, "verify-self-test")
    good = ("func @f(%x: f32[4]) -> f32[4] {\n"
            "  %y = frobnicate %x\n  return %x\n}\n")
    variants = {
        "wrong-column": ("// expected-error@+2:9 {{unknown operation "
                         "'frobnicate'}}\n", "expected error at 3:9 was not "
                         "produced"),
        "wrong-message": ("// expected-error@+2:8 {{unknown operation "
                          "'frob'}}\n", "unexpected error: unknown operation "
                          "'frobnicate'"),
        "unexpected": ("", "unexpected error: unknown operation "
                       "'frobnicate'"),
        "missing": ("// expected-error@+2:8 {{unknown operation "
                    "'frobnicate'}}\n// expected-error@+3:3 {{not emitted}}\n",
                    "expected error at 5:3 was not produced: not emitted"),
        "malformed": ("// expected-error@+2:8 {{unknown operation "
                      "'frobnicate'}}\n// expected-error@+1 {{unclosed\n",
                      "malformed diagnostic annotation"),
    }
    for name, (annotation, needle) in variants.items():
        path = write(os.path.join(d, name + ".kir"), annotation + good)
        rc, err = run(kinac, ["--verify-diagnostics", path], d)
        problems = []
        if rc != 1:
            problems.append(f"exit code {rc}, expected 1; stderr:\n{err}")
        if needle not in err:
            problems.append(f"missing '{needle}' in:\n{err}")
        results.append(("verify-mode-" + name, problems))
    # Without annotations and without errors, verify mode succeeds.
    path = write(os.path.join(d, "clean.kir"),
                 "func @f(%x: f32[4]) -> f32[4] {\n  return %x\n}\n")
    rc, err = run(kinac, ["--verify-diagnostics", "--emit=mlir", path], d)
    results.append(("verify-mode-clean",
                    [] if rc == 0 and not err else
                    [f"exit code {rc}, expected 0; stderr:\n{err}"]))
    return results


def internal_error_cases(kinac, workdir, good):
    """Internal compiler errors, forced with the hidden developer option
    --debug-force-internal-error: IR that does not verify after a pass, and
    a crash (SIGSEGV) inside one. Each must read `kinac: internal error:`
    naming the pass, never as an error of the user's source, ask for a
    report, exit 70, write no output (an existing one untouched) and leave
    only the kept IR file (for the verifier failure) in TMPDIR."""
    results = []
    for name, flag, head, kept_ir in (
            ("internal-error-invalid-ir", "invalid-ir:kina-entry-points",
             "kinac: internal error: the pass 'kina-entry-points' produced "
             "IR that does not verify", True),
            ("internal-error-invalid-ir-first-pass", "invalid-ir:canonicalize",
             "kinac: internal error: the pass 'canonicalize' produced IR "
             "that does not verify", True),
            ("internal-error-crash", "crash:kina-lower-to-llvm",
             "kinac: internal error: kinac crashed while running the pass "
             "'kina-lower-to-llvm'", False)):
        for existing in (False, True):
            problems = []
            d = fresh_dir(workdir, name + ("-existing" if existing else ""))
            tmp = fresh_dir(workdir, name + ("-existing" if existing else "")
                            + "-tmp")
            out = os.path.join(d, "out.o")
            if existing:
                with open(out, "wb") as f:
                    f.write(SENTINEL)
            rc, err = run(kinac, [good, f"--debug-force-internal-error={flag}",
                                  "-o", out], d,
                          env=dict(os.environ, TMPDIR=tmp))
            lines = err.splitlines()
            if rc != 70:
                problems.append(f"exit code {rc}, expected 70:\n{err}")
            if not lines or lines[0] != head:
                problems.append(f"expected '{head}' first:\n{err}")
            if "please report it" not in err:
                problems.append(f"no request to report it:\n{err}")
            # Nothing may look like an error of the user's file.
            if re.search(r"^\S*mlp\.kir:\d+:\d+: error", err, re.M):
                problems.append(f"an internal message reads as the user's "
                                f"error:\n{err}")
            kept = re.findall(r"the IR after the failing pass is kept in "
                              r"(\S+)$", err, re.M)
            left = sorted(os.listdir(tmp))
            if kept_ir:
                if not ("'builtin.module' op can only contain attributes "
                        "with dialect-prefixed names" in err):
                    problems.append(f"the verifier's message is not shown:"
                                    f"\n{err}")
                if len(kept) != 1 or os.path.dirname(kept[0]) != tmp or \
                        left != [os.path.basename(kept[0])]:
                    problems.append(f"expected one kept IR file in TMPDIR, "
                                    f"named: {kept}, TMPDIR holds {left}")
                else:
                    with open(kept[0]) as f:
                        ir = f.read()
                    if "kina_debug_invalid_ir" not in ir or \
                            '"builtin.module"()' not in ir:
                        problems.append(f"the kept file is not the failing "
                                        f"IR:\n{ir[:500]}")
            else:
                if "PLEASE submit a bug report" not in err or \
                        "Stack dump" not in err and " #0 " not in err:
                    problems.append(f"no stack dump and report request:\n"
                                    f"{err}")
                if left:
                    problems.append(f"temporary files left: {left}")
            check_outputs(d, out, existing, problems)
            results.append((name + ("-existing" if existing else ""),
                            problems))
    # JSON: one object, severity error, the notes nested.
    problems = []
    d = fresh_dir(workdir, "internal-error-json")
    tmp = fresh_dir(workdir, "internal-error-json-tmp")
    rc, err = run(kinac, [good, "--diagnostics-format=json",
                          "--debug-force-internal-error=invalid-ir:cse",
                          "-o", os.path.join(d, "out.o")], d,
                  env=dict(os.environ, TMPDIR=tmp))
    try:
        objs = [json.loads(l) for l in err.splitlines()]
    except ValueError:
        objs = []
    if rc != 70 or len(objs) != 1 or objs[0]["severity"] != "error" or \
            not objs[0]["message"].startswith(
                "internal error: the pass 'cse' produced IR") or \
            not any("kept in" in n["message"] for n in objs[0]["notes"]):
        problems.append(f"exit code {rc}, expected 70 and one JSON "
                        f"internal error:\n{err}")
    results.append(("internal-error-json", problems))
    # A pass that is not in the pipeline, a malformed value: errors of the
    # command line.
    for name, flag, needle in (
            ("internal-error-no-such-pass", "crash:no-such-pass",
             "--debug-force-internal-error: no pass 'no-such-pass' ran"),
            ("internal-error-bad-value", "segv",
             "--debug-force-internal-error: 'segv' is neither")):
        d = fresh_dir(workdir, name)
        rc, err = run(kinac, [good, f"--debug-force-internal-error={flag}",
                              "-o", os.path.join(d, "out.o")], d)
        problems = [] if rc == 1 and f"kinac: error: {needle}" in err else [
            f"exit code {rc}, expected 1 and '{needle}':\n{err}"]
        check_outputs(d, os.path.join(d, "out.o"), False, problems)
        results.append((name, problems))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    kinac = os.path.abspath(args.kinac)
    results = []

    case_files = sorted(glob.glob(os.path.join(HERE, "cases", "*.kir")))
    if len(case_files) < MIN_CASES:
        results.append(("case-count", [f"only {len(case_files)} cases, at "
                                       f"least {MIN_CASES} expected"]))
    gen = fresh_dir(args.workdir, "generated")
    located = [(os.path.splitext(os.path.basename(p))[0], p, parse_flags(p))
               for p in case_files]
    located += [(name, p, []) for name, p in generated_limit_cases(gen)]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        futures = [(name, pool.submit(run_located_case, kinac, args.workdir,
                                      name, p, flags))
                   for name, p, flags in located]
        results += [(name, f.result()) for name, f in futures]

    # Inputs with no room for annotations: the errors are known.
    empty = write(os.path.join(gen, "empty.kir"), b"")
    results.append(("empty-file", run_located_case(
        kinac, args.workdir, "empty-file",
        write(os.path.join(gen, "empty-annotated.kir"),
              "// expected-error@1:1 {{expected at least one function "
              "('func @name(...) -> type { ... }')}}\n"), [])))
    binary = write(os.path.join(gen, "binary.kir"), bytes(range(256)) * 4)
    for name, path in (("empty-file-no-comment", empty),
                       ("binary-file", binary)):
        d = fresh_dir(args.workdir, name)
        rc, err = run(kinac, [path, "-o", os.path.join(d, "out.o")], d)
        problems = [] if rc == 1 and f"{path}:1:1: error: " in err else [
            f"exit code {rc}, expected 1 and an error at 1:1:\n{err}"]
        check_outputs(d, os.path.join(d, "out.o"), False, problems)
        results.append((name, problems))

    good = os.path.join(HERE, "..", "..", "samples", "digits", "mlp.kir")
    main_c = write(os.path.join(gen, "main.c"), "int main(void) { return 0; }\n")
    missing = os.path.join(gen, "does-not-exist.kir")
    directory = os.path.join(gen, "directory.kir")
    os.makedirs(directory, exist_ok=True)
    driver_cases = [
        ("missing-file", [missing], f"cannot open '{missing}': No such file"),
        ("directory-input", [directory], f"cannot open '{directory}': Is a "
         "directory"),
        ("no-input", [], "no input files"),
        ("no-kir-input", [main_c], "no .kir input file"),
        ("two-kir-inputs", [good, good], "one .kir input at a time"),
        ("bad-flag", [good, "--no-such-flag"], "--no-such-flag"),
        ("bad-emit", [good, "--emit=exe"], "--emit: exe not in"),
        ("bad-opt-level", [good, "-O7"], "-O: Value 7 not in range 0 to 3"),
        ("bad-target", [good, "--target=tpu"],
         "--target: tpu not in {cpu,cuda}"),
        ("bad-diagnostics-format", [good, "--diagnostics-format=xml"],
         "--diagnostics-format: xml not in {text,json}"),
        ("emit-with-link", [good, main_c, "--emit=mlir"],
         "--emit=mlir cannot be combined with C sources"),
        ("verify-with-link", [good, main_c, "--verify-diagnostics"],
         "--verify-diagnostics checks one .kir file at a time"),
        ("bad-mcpu", [good, "--mcpu=no-such-cpu"],
         "unknown processor 'no-such-cpu' in --mcpu"),
        ("bad-symbol-prefix", [good, "--symbol-prefix=a-b"],
         "--symbol-prefix 'a-b' would make invalid C names"),
        ("symbol-prefix-with-space", [good, "--symbol-prefix=a b"],
         "--symbol-prefix 'a b' would make invalid C names"),
        ("symbol-prefix-leading-digit", [good, "--symbol-prefix=1x"],
         "--symbol-prefix '1x' would make invalid C names"),
        ("missing-llc", [good, "--llc=/nonexistent/llc"],
         "cannot run 'llc': '/nonexistent/llc' is not an executable file"),
        ("missing-mlir-translate", [good, "--mlir-translate=/nonexistent/mt"],
         "cannot run 'mlir-translate': '/nonexistent/mt' is not an "
         "executable file"),
        ("stats-before-pipeline", [good, "--stats", "--emit=kir"],
         "--stats needs a stage that runs the target's pipeline, not "
         "--emit=kir"),
        ("stats-bad-format", [good, "--stats=xml"],
         "--stats: xml not in {text,json}"),
        ("stats-shape-malformed", [good, "--stats", "--stats-shape=N"],
         "--stats-shape: 'N' is not NAME=SIZE"),
        ("stats-shape-negative", [good, "--stats", "--stats-shape=N=-1"],
         "--stats-shape: 'N=-1' is not NAME=SIZE"),
        ("stats-file-without-stats", [good, "--stats-file=s.json"],
         "--stats-file and --stats-shape need --stats"),
        ("stats-with-link", [good, main_c, "--stats"],
         "--stats applies to the compilation of one .kir file"),
        ("stats-file-is-input", [good, "--stats", "--stats-file=" + good],
         "is the same as output file"),
    ]
    for name, cargs, needle in driver_cases:
        results.append((name, run_driver_case(kinac, args.workdir, name, cargs,
                                              needle)))
    results.append(("missing-c-compiler", run_driver_case(
        kinac, args.workdir, "missing-c-compiler", [good, main_c],
        "cannot find the C compiler driver 'kina-no-such-cc'",
        env={"CC": "kina-no-such-cc"})))
    results.append(("unwritable-output", run_driver_case(
        kinac, args.workdir, "unwritable-output",
        [good, "-o", "/nonexistent/dir/out.o"],
        "cannot write '/nonexistent/dir/out.o': No such file or directory",
        add_output=False)))
    results.append(("no-temporary-directory", run_driver_case(
        kinac, args.workdir, "no-temporary-directory", [good],
        "cannot create a temporary file: No such file or directory",
        env={"TMPDIR": os.path.join(gen, "no-such-tmp")})))
    for name, cargs, needle, add_output in [
            ("dep-flag-without-value", [good, "-MD", "-MF"], "-MF needs a value",
             False),
            ("dep-flags-without-md", [good, "-MF", "x.d"],
             "-MF, -MT and -MP need -MD", True),
            ("dep-file-for-stdout", [good, "-MD", "--emit=mlir", "-o", "-"],
             "-MD with output to standard output needs -MF", False),
            ("dep-target-for-stdout", [good, "-MD", "-MF", "x.d",
                                       "--emit=mlir", "-o", "-"],
             "-MD with output to standard output needs -MT", False),
            ("dep-with-link", [good, main_c, "-MD"],
             "-MD applies to the compilation of one .kir file", True),
            # The dependency file cannot be written: the output (existing
            # or not) must not be written either.
            ("unwritable-dep-file", [good, "-MD", "-MF", "/nonexistent/d/x.d"],
             "cannot write '/nonexistent/d/x.d'", True)]:
        results.append((name, run_driver_case(kinac, args.workdir, name, cargs,
                                              needle, add_output=add_output)))
    results.append(("link-to-stdout", run_driver_case(
        kinac, args.workdir, "link-to-stdout", [good, main_c, "-o", "-"],
        "cannot write an executable to standard output", add_output=False)))

    results += output_is_input_cases(kinac, args.workdir, good, main_c)
    results += special_output_cases(kinac, args.workdir, good)
    results.append(("non-ascii-source-line", non_ascii_display(
        kinac, args.workdir)))
    results += verify_mode_self_tests(kinac, args.workdir)
    results += internal_error_cases(kinac, args.workdir, good)

    failed = 0
    for name, problems in results:
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("  " + p.replace("\n", "\n  ")[:4000])
        else:
            print(f"PASS {name}")
    print(f"{len(results) - failed} passed, {failed} failed "
          f"({len(case_files)} annotated cases)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
