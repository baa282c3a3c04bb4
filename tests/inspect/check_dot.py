#!/usr/bin/env python3
"""Checks `kinac --emit=dot` against the kernels the pipeline produced.

For each module given, and each target:

- cpu: the kernels the dot records (its `// kernel K OP lines ...` comments,
  one per cluster member) are compared with the loop nests of
  `kinac --emit=mlir-llvm --mlir-print-debuginfo`: the outermost natural
  loops of each Kina function's control-flow graph (dominators and back
  edges computed here from the printed blocks), each loop nest's Kina
  statement lines taken from the locations of its ops. At -O0 there is one
  loop nest per kernel with loops (the same multiset of line sets); at -O2
  the matmul kernel is several loop nests, so the sets of line sets must be
  equal, except that a kernel over a small static shape may be straight-line
  vector code (its lines then show outside every loop). Kernels on rank-0 tensors (`loops 0`) have no loop nest of
  their own unless their payload loops (integer pow).
- cuda (when ptxas is there): the kernel symbols of the dot, in order, are
  the `gpu.launch_func` symbols of `--emit=mlir-gpu` in each function, and
  each kernel's lines are those of the locations in its `gpu.func`.

And for every module: the statements inside a kernel cluster are exactly
the statements its kernels name; two runs give the same bytes; `dot -Tsvg`
renders the output (when Graphviz's dot is installed). A module with an
error gets its located diagnostic, exit code 1, and no output.
"""
import argparse
import os
import re
import subprocess
import sys

LOC_DEF = re.compile(r'^(#loc\d*) = loc\((.*)\)\s*$')
FILE_LOC = re.compile(r'"([^"]*)":(\d+):(\d+)')
LOC_REF = re.compile(r'#loc\d*')


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('FAIL: %s\n%s' % (' '.join(cmd), r.stderr))
    return r.stdout


def loc_table(text, path):
    """#locN -> set of lines in `path` (resolving nested references)."""
    raw = {}
    for line in text.splitlines():
        m = LOC_DEF.match(line)
        if m:
            raw[m.group(1)] = m.group(2)
    resolved = {}

    def resolve(name, depth=0):
        if name in resolved:
            return resolved[name]
        body = raw.get(name, '')
        lines = {int(l) for f, l, _ in FILE_LOC.findall(body) if f == path}
        if depth < 50:
            for ref in LOC_REF.findall(body):
                if ref != name:
                    lines |= resolve(ref, depth + 1)
        resolved[name] = lines
        return lines
    for name in raw:
        resolve(name)
    return resolved


def op_lines(line, locs, path):
    """Source lines of the trailing loc(...) of an op line."""
    i = line.rfind(' loc(')
    if i < 0:
        return set()
    body = line[i + 5:]
    lines = {int(l) for f, l, _ in FILE_LOC.findall(body) if f == path}
    for ref in LOC_REF.findall(body):
        lines |= locs.get(ref, set())
    return lines


def functions(text, header):
    """{name: [body lines]} of the functions whose first line matches."""
    out = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = header.match(lines[i])
        if not m or not lines[i].rstrip().endswith('{'):  # declarations
            i += 1
            continue
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith('  }'):
            body.append(lines[i])
            i += 1
        out[m.group(1)] = body
    return out


def outlined_bodies(internal, body):
    """The bodies of the loops `body` runs on the thread pool: at -O1 and
    above a loop nest may sit in an internal `__kina_par_*` function that
    the function passes, through its `*_task`, to kina_rt_parallel_for
    (src/passes/Parallel.cpp); its loops are the function's."""
    out = []
    for task in re.findall(r'llvm\.mlir\.addressof @(__kina_par_\w+_task)',
                           '\n'.join(body)):
        for callee in re.findall(r'llvm\.call @(__kina_par_\w+)\(',
                                 '\n'.join(internal[task])):
            out.append(internal[callee])
    return out


def outermost_loops(body, locs, path):
    """Line sets of the outermost natural loops of an llvm.func body."""
    blocks = [[]]  # entry block first
    names = ['entry']
    for line in body:
        m = re.match(r'^  (\^bb\d+)', line)
        if m:
            blocks.append([])
            names.append(m.group(1))
        else:
            blocks[-1].append(line)
    index = {n: i for i, n in enumerate(names)}
    succ = []
    for ops in blocks:
        term = ops[-1] if ops else ''
        term = term[:term.rfind(' loc(')] if ' loc(' in term else term
        succ.append([index[s] for s in re.findall(r'\^bb\d+', term)])
    n = len(blocks)
    pred = [[] for _ in range(n)]
    for u in range(n):
        for v in succ[u]:
            pred[v].append(u)
    # Dominators, iteratively (reachable blocks only).
    reach, stack = {0}, [0]
    while stack:
        u = stack.pop()
        for v in succ[u]:
            if v not in reach:
                reach.add(v)
                stack.append(v)
    dom = {u: set(reach) for u in reach}
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for u in sorted(reach):
            if u == 0:
                continue
            ps = [p for p in pred[u] if p in reach]
            new = set.intersection(*(dom[p] for p in ps)) if ps else set()
            new = new | {u}
            if new != dom[u]:
                dom[u], changed = new, True
    loops = {}
    for u in reach:
        for v in succ[u]:
            if v in dom[u]:  # back edge u -> v
                body_set = loops.setdefault(v, {v})
                stack = [u]
                while stack:
                    w = stack.pop()
                    if w not in body_set:
                        body_set.add(w)
                        stack.extend(p for p in pred[w] if p in reach)
    outer = [h for h in loops
             if not any(h in loops[o] and o != h and loops[h] <= loops[o]
                        for o in loops)]
    result = []
    for h in sorted(outer):
        lines = set()
        for b in loops[h]:
            for op in blocks[b]:
                lines |= op_lines(op, locs, path)
        result.append((h, lines))
    return [lines for _, lines in result]


def parse_dot(dot):
    """{function index: ([(kernel, op, name, lines)], {stmt line},
    {cluster: (kernel ids, stmt lines)})}."""
    funcs = {}
    current = None
    cluster = None
    for line in dot.splitlines():
        m = re.match(r'^  subgraph "cluster_f(\d+)_fn"', line)
        if m:
            current = funcs.setdefault(int(m.group(1)), ([], set(), {}))
            continue
        m = re.match(r'^    subgraph "cluster_f\d+_(k\d+)"', line)
        if m:
            cluster = m.group(1)
            current[2][cluster] = (set(), set())
            continue
        if re.match(r'^    }', line):
            cluster = None
        m = re.match(r'^\s+// kernel (\d+) (\S+)( @\S+)? loops (\d+) '
                     r'lines(( \d+)*)$', line)
        if m:
            k = (int(m.group(1)), m.group(2), (m.group(3) or '').strip(),
                 {int(x) for x in m.group(5).split()}, int(m.group(4)))
            current[0].append(k)
            current[2][cluster][0].add(k[0])
            continue
        m = re.match(r'^\s+"f\d+_s\d+" \[.*\\nline (\d+)"\];', line)
        if m:
            current[1].add(int(m.group(1)))
            if cluster:
                current[2][cluster][1].add(int(m.group(1)))
    return funcs


def kina_functions(path):
    """Kina function names of a module, in order."""
    return re.findall(r'^\s*(?:private\s+)?func\s+@(\w+)', open(path).read(),
                      re.M)


def check_module(args, path, target, opt):
    base = [args.kinac, path, '-O%d' % opt] + (
        ['--target=cuda'] if target == 'cuda' else [])
    dot = run(base + ['--emit=dot'])
    again = run(base + ['--emit=dot'])
    assert dot == again, '%s: --emit=dot is not deterministic' % path
    if args.dot:
        r = subprocess.run([args.dot, '-Tsvg'], input=dot, capture_output=True,
                           text=True)
        assert r.returncode == 0 and '<svg' in r.stdout, \
            '%s: dot -Tsvg failed: %s' % (path, r.stderr)
    parsed = parse_dot(dot)
    names = kina_functions(path)
    checked = 0
    # Each cluster holds exactly the statements its kernels name.
    for fi, (kernels, stmts, clusters) in parsed.items():
        by_id = {k[0]: k for k in kernels}
        for cname, (ids, members) in clusters.items():
            named = set().union(*(by_id[i][3] for i in ids)) & stmts
            assert named == members, '%s: cluster %s holds %s, its kernels ' \
                'name %s' % (path, cname, sorted(members), sorted(named))
    if target == 'cpu':
        ir = run(base + ['--emit=mlir-llvm', '--mlir-print-debuginfo'])
        locs = loc_table(ir, path)
        internal = functions(ir, re.compile(
            r'^  llvm\.func internal @(__kina_\w+)\('))
        for fi, name in enumerate(names):
            kernels, stmts, _ = parsed.get(fi, ([], set(), {}))
            bodies = [internal['__kina_fn_' + name]] + \
                outlined_bodies(internal, internal['__kina_fn_' + name])
            loops = [l & stmts for body in bodies
                     for l in outermost_loops(body, locs, path)]
            # Kernels on rank-0 tensors have no loop nest of their own,
            # unless their payload loops (integer pow): such a kernel may
            # or may not show as a loop nest.
            want = [k[3] for k in kernels if k[4] > 0 and k[3]]
            maybe = [k[3] for k in kernels if k[4] == 0 and k[3]]
            if opt == 0:
                # One loop nest per kernel with loops (as multisets: the
                # order of the blocks is not the program's).
                left = [sorted(l) for l in loops if l]
                for w in want + maybe:
                    if sorted(w) in left:
                        left.remove(sorted(w))
                    else:
                        assert w in maybe, '%s -O0 @%s: no loop nest for ' \
                            'kernel lines %s; loop nests %s' % (
                                path, name, sorted(w),
                                [sorted(l) for l in loops if l])
                assert not left, '%s -O0 @%s: loop nests %s of no kernel; ' \
                    'dot kernels %s' % (path, name, left,
                                        [sorted(w) for w in want + maybe])
            got = {frozenset(l) for l in loops if l}
            exp = {frozenset(w) for w in want}
            allowed = exp | {frozenset(w) for w in maybe}
            if opt > 0:
                # kina-tile-and-vectorize turns a kernel whose static
                # iteration space fits in a vector or two into straight-line
                # vector code: no loop nest, but its statements' code is in
                # the function, outside every loop. kina-fuse-rows puts a
                # normalisation's kernels (fills, row reductions, the final
                # elementwise op) in one loop over rows: a kernel whose
                # statements are all that loop's has its code inside it.
                straight = set()
                for op in [op for body in bodies for op in body]:
                    straight |= op_lines(op, locs, path)
                in_loops = set().union(*loops) if loops else set()
                for w in exp - got:
                    fused = any(w <= l for l in got)
                    assert fused or w <= straight - in_loops, '%s -O%d @%s: ' \
                        'no loop nest and no straight-line code for kernel ' \
                        'lines %s' % (path, opt, name, sorted(w))
                exp = exp & got
            assert exp <= got <= allowed, '%s -O%d @%s: loop nests %s, dot ' \
                'kernels %s' % (path, opt, name, sorted(map(sorted, got)),
                                sorted(map(sorted, allowed)))
            checked += len(kernels)
    else:
        ir = run(base + ['--emit=mlir-gpu', '--mlir-print-debuginfo'])
        locs = loc_table(ir, path)
        fns = functions(ir, re.compile(r'^    func\.func (?:private )?@(\w+)\('))
        gpu_funcs = {}
        module = None
        for line in ir.splitlines():
            m = re.match(r'^  gpu\.module @(\w+)', line)
            if m:
                module = m.group(1)
                continue
            if module and line.startswith('  }'):
                module = None
            if module:
                gpu_funcs.setdefault(module, set()).update(
                    op_lines(line, locs, path) if ' loc(' in line else set())
        if not fns:  # the functions are not nested in a module body
            fns = functions(ir, re.compile(r'^  func\.func (?:private )?@(\w+)\('))
        for fi, name in enumerate(names):
            kernels, stmts, _ = parsed.get(fi, ([], set(), {}))
            launches = []
            for line in fns.get(name, []):
                m = re.search(r'gpu\.launch_func\s+@(\w+)::@(\w+)', line)
                if m:
                    launches.append(('@%s::@%s' % m.groups(), m.group(1),
                                     op_lines(line, locs, path)))
            assert [k[2] for k in kernels] == [l[0] for l in launches], \
                '%s @%s: dot kernels %s, launches %s' % (
                    path, name, [k[2] for k in kernels],
                    [l[0] for l in launches])
            for k, (sym, module, launch_lines) in zip(kernels, launches):
                seen = (gpu_funcs.get(module, set()) | launch_lines) & stmts
                assert k[3] <= seen and launch_lines & stmts <= k[3], \
                    '%s @%s %s: dot lines %s, kernel locations %s' % (
                        path, name, sym, sorted(k[3]), sorted(seen))
            checked += len(kernels)
    return checked


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--kinac', required=True)
    p.add_argument('--dot', help='Graphviz dot (skipped when absent)')
    p.add_argument('--cuda', action='store_true',
                   help='also check --target=cuda (needs ptxas)')
    p.add_argument('modules', nargs='+')
    args = p.parse_args()
    if args.dot and not os.access(args.dot, os.X_OK):
        args.dot = None
    total = 0
    for path in args.modules:
        for opt in (0, 2):
            total += check_module(args, path, 'cpu', opt)
        if args.cuda:
            total += check_module(args, path, 'cuda', 2)
    # A module with an error: exit 1, the existing output left untouched.
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        bad = os.path.join(work, 'bad.kir')
        out = os.path.join(work, 'bad.dot')
        with open(bad, 'w') as f:
            f.write('func @f(%x: f32[4]) -> f32[4] {\n  %y = exp %x : i32[4]\n'
                    '  return %y\n}\n')
        with open(out, 'w') as f:
            f.write('sentinel')
        r = subprocess.run([args.kinac, bad, '--emit=dot', '-o', out],
                           capture_output=True, text=True)
        assert r.returncode == 1 and ':2:' in r.stderr, \
            'bad module: exit %d, %s' % (r.returncode, r.stderr)
        assert open(out).read() == 'sentinel', 'bad module: output replaced'
    print('check_dot: %d modules, %d kernels checked%s' % (
        len(args.modules), total, '' if args.dot else
        ' (Graphviz dot not found: rendering not checked)'))


if __name__ == '__main__':
    main()
