#!/usr/bin/env python3
"""Compiles every `kir` example of docs/language.md and checks what it claims.

The conventions are the page's own (its introduction):

  - a block holding `func` is a module and must compile to an object;
  - any other block is the body of `func @doc(<params>) -> (<types>)`, whose
    parameters come from `# given %x: T, ...` lines and whose results are
    the annotated values of the block (`%y = neg %x : f32[3]`);
  - `# error: MESSAGE` after a statement: the block must fail to compile,
    with exactly one error per such comment, `MESSAGE` on that line;
  - a comment that is a value (`# [1.0, -0.0, nan]`, `# 21.0`, `# true`) is
    the statement's result: blocks without parameters are compiled to a
    shared library, run with kina-run, and each result compared with it
    (floats as printed to 4 decimals, zeros with their sign, NaN as NaN,
    integers and booleans exactly).

Usage: check_language.py --kinac PATH --kina-run PATH --doc FILE --workdir DIR
"""
import argparse
import math
import os
import re
import subprocess
import sys

import numpy as np

TYPE = re.compile(r"^[a-z0-9]+(\[[^\]]*\])?$")
LOOKS_LIKE_VALUE = re.compile(r"^(\[|-?[0-9]|-?inf\b|nan\b|true\b|false\b)")
ERROR = re.compile(r"^error: (.*)$")


def blocks(doc):
    """(line of the block's first line in doc, [lines]) of each kir block."""
    out, cur, start = [], None, 0
    with open(doc, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if cur is None and line.strip() == "```kir":
                cur, start = [], n + 1
            elif cur is not None and line.strip() == "```":
                out.append((start, cur))
                cur = None
            elif cur is not None:
                cur.append(line)
    return out


def split_comment(line):
    """(code, comment or None); kir code holds no '#' outside comments."""
    if "#" not in line:
        return line.rstrip(), None
    at = line.index("#")
    return line[:at].rstrip(), line[at + 1:].strip()


def parse_value(text):
    return eval(text, {"__builtins__": {}},
                {"nan": math.nan, "inf": math.inf, "true": True,
                 "false": False})


def as_comparable(path, elem):
    got = np.load(path)
    if elem == "bf16":  # raw bits in <u2
        bits = np.left_shift(got.astype(np.uint32).reshape(-1), np.uint32(16))
        got = bits.astype(np.uint32).view(np.float32).reshape(got.shape)
    return got


def compare(got, want, elem):
    """None if `got` is the value `want` the page prints, else why not."""
    want = np.array(want, dtype=bool if elem == "i1" else
                    (np.float64 if elem.startswith(("f", "bf")) else np.int64))
    if got.shape != want.shape:
        return f"shape {got.shape}, the page shows {want.shape}"
    if elem == "i1" or elem.startswith("i"):
        if not np.array_equal(got.astype(want.dtype), want):
            return f"value {got.tolist()}, the page shows {want.tolist()}"
        return None
    g = got.astype(np.float64)
    ok = np.isclose(g, want, rtol=1e-4, atol=6e-5, equal_nan=True)
    zeros = want == 0
    ok &= ~zeros | (np.signbit(g) == np.signbit(want))
    if not ok.all():
        return f"value {g.tolist()}, the page shows {want.tolist()}"
    return None


def check_block(args, index, start, lines):
    """The problems of one block, as strings naming the doc line."""
    where = lambda i: f"{args.doc}:{start + i}"
    base = os.path.join(args.workdir, f"block{index}")
    params, body, results, values, errors = [], [], [], [], {}
    is_module = any(re.match(r"^\s*(private\s+)?func\b|^\s*module\b", l)
                    for l in lines)
    src_lines = []  # (kir line, doc line index)
    for i, line in enumerate(lines):
        code, comment = split_comment(line)
        if comment is not None and comment.startswith("given "):
            params.append(comment[len("given "):])
            continue
        if comment is not None:
            m = ERROR.match(comment)
            if m:
                errors[i] = m.group(1)
            elif not is_module and LOOKS_LIKE_VALUE.match(comment):
                values.append((i, comment))
        if not code:
            continue
        src_lines.append((code, i))
        if not is_module and "=" in code:
            names = [n.strip() for n in code.split("=", 1)[0].split(",")]
            head, sep, ann = code.rpartition(" : ")
            if sep and TYPE.match(ann.strip()) and len(names) == 1:
                results.append((names[0], ann.strip(), i))
    problems = []
    if is_module:
        text = [c for c, _ in src_lines]
        line_of = {k + 1: i for k, (_, i) in enumerate(src_lines)}
    else:
        if not results and not errors:
            return [f"{where(0)}: a statement block with no annotated value"]
        ret = [r[0] for r in results] or [p.split(":")[0].strip()
                                          for p in params[:1]]
        types = [r[1] for r in results] or [p.split(":", 1)[1].strip()
                                            for p in params[:1]]
        if not ret:
            return [f"{where(0)}: nothing to return"]
        text = [f"func @doc({', '.join(params)}) -> ({', '.join(types)}) {{"]
        line_of = {}
        for code, i in src_lines:
            text.append("  " + code.strip())
            line_of[len(text)] = i
        text += [f"  return {', '.join(ret)}", "}"]
    kir = base + ".kir"
    with open(kir, "w", encoding="utf-8") as f:
        f.write("\n".join(text) + "\n")
    run_values = not is_module and not errors and not params and values
    out = base + (".so" if run_values else ".o")
    cmd = [args.kinac, kir, "-o", out] + (["--emit=shared"] if run_values
                                          else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if errors:
        got = re.findall(r"^[^\n]*?\.kir:(\d+):\d+: error: (.*)$", p.stderr,
                         re.M)
        got = [(line_of.get(int(n), -1), msg) for n, msg in got]
        want = sorted(errors.items())
        if p.returncode != 1 or sorted(got) != want:
            problems.append(
                f"{where(0)}: expected exactly the errors "
                f"{[(start + i, m) for i, m in want]}, kinac exited "
                f"{p.returncode} with:\n{p.stderr}")
        return problems
    if p.returncode != 0:
        return [f"{where(0)}: does not compile:\n{p.stderr}"]
    if not run_values:
        return problems
    npys = [f"{base}.r{k}.npy" for k in range(len(results))]
    cmd = [args.kina_run, out, "doc"]
    for n in npys:
        cmd += ["--out", n]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return [f"{where(0)}: kina-run failed ({p.returncode}): {p.stderr}"]
    by_line = {r[2]: (k, r) for k, r in enumerate(results)}
    for i, comment in values:
        if i not in by_line:
            problems.append(f"{where(i)}: a value comment on a statement "
                            "without an annotation: {comment}")
            continue
        k, (name, ty, _) = by_line[i]
        try:
            want = parse_value(comment)
        except Exception as e:  # a comment that looks like a value but is not
            problems.append(f"{where(i)}: cannot read the value '{comment}': "
                            f"{e}")
            continue
        elem = ty.split("[")[0]
        why = compare(as_comparable(npys[k], elem), want, elem)
        if why:
            problems.append(f"{where(i)}: {name} has {why}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinac", required=True)
    ap.add_argument("--kina-run", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--min-blocks", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    found = blocks(args.doc)
    problems, checked_values = [], 0
    for index, (start, lines) in enumerate(found):
        problems += check_block(args, index, start, lines)
        checked_values += sum(
            1 for l in lines
            if (c := split_comment(l)[1]) and LOOKS_LIKE_VALUE.match(c))
    for p in problems:
        print("FAIL " + p)
    print(f"{len(found)} kir blocks, {checked_values} value comments, "
          f"{len(problems)} problems")
    if len(found) < args.min_blocks:
        print(f"FAIL expected at least {args.min_blocks} kir blocks")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
