#!/usr/bin/env python3
"""Checks `kinac --autotune` and `--tuning-cache` (docs/autotune.md).

- A real --autotune run with a small budget on a small matmul (symbolic N
  bound by --tune-shape) writes a cache whose entry names the op (kind and
  line:col), module, function, shapes, dtype, bindings, target, processor
  and a valid "cpu.matmul" schedule; the tuned library's result equals
  NumPy's A @ B; no temporary file is left beside the cache.
- Two builds with --tuning-cache are byte-identical and run no kina-run
  (-v lists every tool kinac runs); --autotune without a cache builds.
- A hand-written schedule (vbits=128) turns the kernel's vector<8xf32> into
  vector<4xf32> in --emit=mlir-llvm.
- The thread split ("grain"): at N=200 the default grain (2^16) keeps the
  matmul on one thread (no kina_rt_parallel_for region at
  KINA_NUM_THREADS=2), a hand-written grain=4096 splits it (a region, the
  same result), grain=0 calls no thread-pool function at all.
- --autotune-budget bounds the search: with 1 second, kinac measures few
  candidates and ends within the budget plus the time of the candidates
  already started.
- Stale and foreign entries (other processor, other operand types, other
  --tune-shape size, unknown schedule version) are ignored with a warning
  naming the file and the entry, and the output is the default one.
- Malformed caches (JSON syntax, a mistyped field, a value outside the
  space) are errors located at line:column or at the field, exit 1, and
  write no output; a symbolic dim --tune-shape lacks is an error naming it.
- Reductions and normalisations ("cpu.vectorize"): a real search on
  softmax and reduce_sum records entries keyed `reduction@line:col` with
  vbits, vectors and grain; the tuned library matches NumPy; hand-written
  schedules reach every op of the statement: vbits=128 vectors=1 gives
  vector<4xf32> only, vbits=128 vectors=4 vector<16xf32> tiles, grain=0
  no kina_rt_parallel_for call.
- cuda: --autotune --target=cuda fails with exit 1 (no GPU to measure on);
  with --cuda (ptxas found), a hand-written "cuda.elementwise" entry
  (block 128) sets the launches' block size in --emit=mlir-gpu.
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print('FAIL: ' + what)
    else:
        print('ok: ' + what)


MATMUL = '''module @mm
func @mm(%a: f32[N, 64], %b: f32[64, 32]) -> f32[N, 32] {
  %c = matmul %a, %b
  return %c
}
'''

ELEMENTWISE = '''module @ew
func @ew(%a: f32[N], %b: f32[N]) -> f32[N] {
  %c = add %a, %b
  return %c
}
'''


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def write_json(path, obj):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=2)


def search(kinac, work, stem, source, cache_name, so_name, shape):
    """Writes `source` to WORK/STEM.kir and runs a real --autotune search
    (4 s budget, --tune-shape `shape`) into WORK/CACHE_NAME, building
    WORK/SO_NAME; returns (kir, cache, so, the completed process)."""
    kir = os.path.join(work, stem + '.kir')
    with open(kir, 'w') as f:
        f.write(source)
    cache = os.path.join(work, cache_name)
    so = os.path.join(work, so_name)
    r = run([kinac, kir, '--autotune', '--tune-shape', shape,
             '--autotune-budget', '4', '--tuning-cache', cache,
             '--emit=shared', '-o', so])
    return kir, cache, so, r


REGIONS = r'''
import ctypes, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import kina
lib = kina.load(sys.argv[2])
a = np.ones((200, 64), np.float32)
b = np.ones((64, 32), np.float32)
c = lib.mm(a, b)
assert c.shape == (200, 32) and np.all(c == 64), c
raw = ctypes.CDLL(sys.argv[2])
raw.kina_rt_parallel_regions.restype = ctypes.c_uint64
print(raw.kina_rt_parallel_regions())
'''


def parallel_regions(so):
    """The kina_rt_parallel_for regions one call of @mm in `so` (200x64
    times 64x32 ones) splits at KINA_NUM_THREADS=2, or None on failure."""
    python = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                          '..', 'python')
    r = run([sys.executable, '-c', REGIONS, python, so],
            env=dict(os.environ, KINA_NUM_THREADS='2'))
    if r.returncode != 0:
        print(r.stderr)
        return None
    return int(r.stdout.strip())


def read_bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--kinac', required=True)
    ap.add_argument('--kina-run', required=True)
    ap.add_argument('--cuda', action='store_true')
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix='kina-autotune-')
    checks(args, work)
    # The work directory is kept for a failing run, to be looked at.
    if FAILURES:
        print('work directory kept: %s' % work)
    else:
        shutil.rmtree(work, ignore_errors=True)


def checks(args, work):
    """Every check of this script, with its files under WORK."""
    kinac = args.kinac
    # A real search, bounded to a few seconds.
    kir, cache, tuned_so, r = search(kinac, work, 'mm', MATMUL, 'cache.json',
                                     'tuned.so', 'N=200')
    check(r.returncode == 0, '--autotune exits 0 (%s)' % r.stderr[-2000:])
    if r.returncode != 0:
        return
    with open(cache) as f:
        c = json.load(f)
    check(c.get('format') == 'kinac-tuning-cache' and c.get('version') == 1,
          'cache format and version')
    entries = c.get('entries', [])
    check(len(entries) == 1, 'one entry for the one matmul')
    e = entries[0]
    check(re.fullmatch(r'matmul@3:\d+', e.get('key', '')) is not None,
          'entry key is the matmul at line 3: %r' % e.get('key'))
    check(e.get('module') == 'mm' and e.get('function') == 'mm',
          'entry names module and function')
    check(e.get('shapes') == 'tensor<?x64xf32>, tensor<64x32xf32>',
          'entry shapes: %r' % e.get('shapes'))
    check(e.get('dtype') == 'f32' and e.get('bindings') == {'N': 200},
          'entry dtype and bindings')
    check(e.get('target') == 'cpu' and e.get('processor'),
          'entry target and processor')
    sched = e.get('schedule', {})
    check(set(sched) == {'vbits', 'mr', 'nv', 'mc', 'kc', 'ku', 'grain'},
          'schedule has the cpu.matmul parameters: %r' % sched)
    check(e.get('median_s', 0) > 0 and e.get('default_median_s', 0) > 0 and
          e['median_s'] <= e['default_median_s'],
          'best median <= default median')
    check(sorted(os.listdir(work)) == ['cache.json', 'mm.kir', 'tuned.so'],
          'no temporary file left beside the cache: %r' % os.listdir(work))

    # The tuned library computes A @ B.
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (200, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    np.save(os.path.join(work, 'a.npy'), a)
    np.save(os.path.join(work, 'b.npy'), b)
    out = os.path.join(work, 'c.npy')
    r = run([args.kina_run, tuned_so, 'mm', '--in',
             os.path.join(work, 'a.npy'), '--in',
             os.path.join(work, 'b.npy'), '--out', out])
    check(r.returncode == 0, 'kina-run of the tuned library (%s)' % r.stderr)
    if r.returncode == 0:
        got = np.load(out)
        check(np.allclose(got, a @ b, rtol=1e-4, atol=1e-4),
              'tuned matmul equals NumPy (max err %g)' %
              np.abs(got - a @ b).max())

    # Builds with the cache are byte-identical and measure nothing.
    objs = []
    r = run([kinac, kir, '--autotune', '--tune-shape', 'N=200',
             '--autotune-budget', '0', '-o', os.path.join(work, 'at.o')])
    check(r.returncode == 0, '--autotune without a cache exits 0')
    for i in range(2):
        o = os.path.join(work, 'cached%d.o' % i)
        r = run([kinac, kir, '--tuning-cache', cache, '-v', '-o', o])
        check(r.returncode == 0 and 'kina-run' not in r.stderr and
              'warning' not in r.stderr,
              'cache build %d: no measuring, no warning (%s)' % (i, r.stderr))
        objs.append(read_bytes(o))
    check(objs[0] == objs[1], 'cache builds are byte-identical')
    r = run([kinac, kir, '--tuning-cache', cache, '--emit=mlir-llvm',
             '--tune-shape', 'N=200'])
    check(r.returncode == 0 and 'warning' not in r.stderr,
          'cache build with the tuned --tune-shape: no warning')

    # A hand-written schedule reaches the kernel.
    def mlir_llvm(cache_path=None, extra=()):
        cmd = [kinac, kir, '--emit=mlir-llvm'] + list(extra)
        if cache_path:
            cmd += ['--tuning-cache', cache_path]
        return run(cmd)

    default = mlir_llvm()
    check(default.returncode == 0 and 'vector<8xf32>' in default.stdout,
          'default kernel uses vector<8xf32>')
    hand = copy.deepcopy(c)
    hand['entries'][0]['schedule'] = {'vbits': 128, 'mr': 2, 'nv': 1,
                                      'mc': 64, 'kc': 128, 'ku': 2,
                                      'grain': 65536}
    hand_path = os.path.join(work, 'hand.json')
    write_json(hand_path, hand)
    r = mlir_llvm(hand_path)
    # The kernel's vectors become vector<4xf32>; the few vector<8xf32> left
    # are kina-tile-and-vectorize's (the output's fill), whose width comes
    # from the processor (256 bits in a multiversioned build), not from the
    # matmul schedule.
    check(r.returncode == 0 and 'vector<4xf32>' in r.stdout and
          4 * r.stdout.count('vector<8xf32>') <
          default.stdout.count('vector<8xf32>') and
          'warning' not in r.stderr,
          'hand-written vbits=128 gives vector<4xf32> kernels (%d '
          'vector<8xf32> left of %d)' % (r.stdout.count('vector<8xf32>'),
                                          default.stdout.count('vector<8xf32>')))

    # The thread split: default grain (one piece at N=200: 25600 cost
    # units), 4096 (six grains: split at 2 threads), 0 (no pool).
    def with_grain(grain):
        g = copy.deepcopy(c)
        g['entries'][0]['schedule'] = dict(sched, grain=grain)
        path = os.path.join(work, 'grain%d.json' % grain)
        write_json(path, g)
        so = os.path.join(work, 'grain%d.so' % grain)
        r = run([kinac, kir, '--tuning-cache', path, '--emit=shared', '-o',
                 so])
        check(r.returncode == 0 and 'warning' not in r.stderr,
              'grain=%d build (%s)' % (grain, r.stderr))
        return path, so

    _, so_default = with_grain(65536)
    _, so_fine = with_grain(4096)
    path_none, _ = with_grain(0)
    regions = (parallel_regions(so_default), parallel_regions(so_fine))
    check(regions[0] == 0 and regions[1] is not None and regions[1] >= 1,
          'grain 65536 keeps N=200 on one thread, grain 4096 splits it '
          '(regions %r)' % (regions,))
    r = mlir_llvm(path_none)
    check(r.returncode == 0 and 'kina_rt_parallel' not in r.stdout and
          'kina_rt_parallel_threads' in default.stdout,
          'grain=0: no thread-pool call (default has one)')
    for name in ('grain65536.json', 'grain4096.json', 'grain0.json',
                 'grain65536.so', 'grain4096.so'):
        os.remove(os.path.join(work, name))

    # Stale and foreign entries: a warning naming the file and entry, and
    # the default kernel.
    def stale(name, change, extra=(), expect=''):
        bad = copy.deepcopy(hand)
        change(bad['entries'][0])
        path = os.path.join(work, name + '.json')
        write_json(path, bad)
        r = mlir_llvm(path, extra)
        check(r.returncode == 0 and 'warning' in r.stderr and
              path in r.stderr and 'entry 0' in r.stderr and
              expect in r.stderr and r.stdout == default.stdout,
              '%s entry ignored with a warning (%s)' % (name, r.stderr.strip()))

    stale('foreign-processor',
          lambda e: e.update(processor='not-this-cpu'), expect='processor')
    stale('foreign-features',
          lambda e: e.update(features='+sve'), expect='features')
    stale('stale-shapes',
          lambda e: e.update(shapes='tensor<?x32xf32>, tensor<32x32xf32>'),
          expect='operand types')
    stale('stale-dtype', lambda e: e.update(dtype='f64'), expect='element')
    stale('stale-version', lambda e: e.update(space_version=99),
          expect='version 99')
    stale('stale-binding', lambda e: None, extra=('--tune-shape', 'N=300'),
          expect='N=200')
    stale('stale-position', lambda e: e.update(key='matmul@9:3'),
          expect='no tunable op')

    # Malformed caches: located errors, exit 1, no output.
    def malformed(name, text, expect):
        path = os.path.join(work, name + '.json')
        with open(path, 'w') as f:
            f.write(text)
        o = os.path.join(work, name + '.o')
        r = run([kinac, kir, '--tuning-cache', path, '-o', o])
        check(r.returncode == 1 and expect in r.stderr and
              not os.path.exists(o),
              '%s: error %r (%s)' % (name, expect, r.stderr.strip()))

    malformed('syntax', '{"format": "kinac-tuning-cache", "version": 1,\n'
              '  "entries": [\n    {"key": }\n  ]}\n',
              os.path.join(work, 'syntax.json') + ':3:13:')
    typo = copy.deepcopy(hand)
    typo['entries'][0]['schedule']['mr'] = 'four'
    malformed('mistyped', json.dumps(typo), 'entries[0].schedule.mr')
    outside = copy.deepcopy(hand)
    outside['entries'][0]['schedule']['mr'] = 5
    malformed('outside', json.dumps(outside), "'mr' is 5")
    malformed('not-a-cache', '{"entries": []}', 'format')
    r = run([kinac, kir, '--tuning-cache', os.path.join(work, 'none.json'),
             '-o', os.path.join(work, 'none.o')])
    check(r.returncode == 1 and 'none.json' in r.stderr,
          'missing cache without --autotune is an error')

    # A symbolic dim --tune-shape does not size.
    r = run([kinac, kir, '--autotune', '-o', os.path.join(work, 'x.o')])
    check(r.returncode == 1 and 'N' in r.stderr and
          '--tune-shape' in r.stderr and
          not os.path.exists(os.path.join(work, 'x.o')),
          'missing --tune-shape symbol is an error (%s)' % r.stderr.strip())

    # The budget: with 1 second, few candidates and about a second more
    # than one candidate's compile and run.
    t0 = time.monotonic()
    r = run([kinac, kir, '--emit=shared', '-o',
             os.path.join(work, 'plain.so')])
    one = time.monotonic() - t0
    t0 = time.monotonic()
    r = run([kinac, kir, '--autotune', '--tune-shape', 'N=200',
             '--autotune-budget', '1', '-v', '-o',
             os.path.join(work, 'budget.o')])
    wall = time.monotonic() - t0
    measured = len(re.findall(r'kina-run\S* \S+ mm --bench', r.stderr))
    check(r.returncode == 0 and 1 <= measured < 20,
          'budget 1 s: %d candidates measured' % measured)
    check(wall < 1 + 3 * one + 2,
          'budget 1 s: %.1f s of wall clock (one compile %.1f s)' %
          (wall, one))

    red = os.path.join(work, 'reductions')
    os.makedirs(red)
    check_reductions(args, red)

    # cuda: no measuring here; a hand-written block size is used.
    r = run([kinac, kir, '--target=cuda', '--autotune', '--tune-shape',
             'N=200', '-o', os.path.join(work, 'cuda.o')])
    check(r.returncode == 1 and 'GPU' in r.stderr and
          not os.path.exists(os.path.join(work, 'cuda.o')),
          'cuda --autotune is refused (%s)' % r.stderr.strip())
    if args.cuda:
        ew = os.path.join(work, 'ew.kir')
        with open(ew, 'w') as f:
            f.write(ELEMENTWISE)
        cuda_cache = os.path.join(work, 'cuda.json')
        write_json(cuda_cache, {
            'format': 'kinac-tuning-cache', 'version': 1, 'entries': [{
                'key': 'cuda.elementwise', 'space': 'cuda.elementwise',
                'space_version': 1, 'target': 'cuda', 'processor': 'sm_90',
                'schedule': {'block': 128}}]})
        base = run([kinac, ew, '--target=cuda', '--emit=mlir-gpu'])
        tuned = run([kinac, ew, '--target=cuda', '--emit=mlir-gpu',
                     '--tuning-cache', cuda_cache])
        pat = r'threads in \(%c(\d+)'
        check(base.returncode == 0 and
              set(re.findall(pat, base.stdout)) == {'256'},
              'cuda default block size 256 (%s)' % base.stderr)
        check(tuned.returncode == 0 and
              set(re.findall(pat, tuned.stdout)) == {'128'} and
              'warning' not in tuned.stderr,
              'cuda cache block size 128 (%s)' % tuned.stderr)
        other = run([kinac, ew, '--target=cuda', '--gpu-arch=sm_80',
                     '--emit=mlir-gpu', '--tuning-cache', cuda_cache])
        check(other.returncode == 0 and 'sm_90' in other.stderr and
              set(re.findall(pat, other.stdout)) == {'256'},
              'cuda entry of another arch ignored with a warning (%s)' %
              other.stderr.strip())


REDUCTIONS = '''module @red
func @sm(%x: f32[R, N]) -> f32[R, N] {
  %y = softmax %x {axis = -1}
  return %y
}
func @rs(%x: f32[R, N]) -> f32[R] {
  %y = reduce_sum %x {axes = [1]}
  return %y
}
'''


def check_reductions(args, work):
    """The "cpu.vectorize" space: search, results, hand-written schedules."""
    kinac = args.kinac
    kir, cache, so, r = search(kinac, work, 'red', REDUCTIONS, 'red.json',
                               'red.so', 'R=64,N=512')
    check(r.returncode == 0, 'reductions: --autotune exits 0 (%s)' %
          r.stderr[-2000:])
    if r.returncode != 0:
        return
    with open(cache) as f:
        c = json.load(f)
    entries = c.get('entries', [])
    keys = sorted(e.get('key', '') for e in entries)
    check(len(entries) >= 1 and all(
        re.fullmatch(r'reduction@(3|7):\d+', k) for k in keys) and
        all(e.get('space') == 'cpu.vectorize' and
            set(e.get('schedule', {})) == {'vbits', 'vectors', 'grain'}
            for e in entries),
        'reductions: cpu.vectorize entries keyed by statement: %r' % keys)
    x = np.random.default_rng(3).uniform(-4, 4, (64, 512)).astype(np.float32)
    xin = os.path.join(work, 'x.npy')
    np.save(xin, x)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = {'sm': e / e.sum(axis=1, keepdims=True),
            'rs': x.astype(np.float64).sum(axis=1)}
    for fn, ref in want.items():
        out = os.path.join(work, fn + '.npy')
        r = run([args.kina_run, so, fn, '--in', xin, '--out', out])
        ok = r.returncode == 0 and np.allclose(np.load(out), ref, rtol=1e-5,
                                               atol=1e-5)
        check(ok, 'reductions: tuned @%s equals NumPy (%s)' % (fn, r.stderr))

    # Hand-written schedules for both statements, with the search's
    # identity (processor, features, --mcpu).
    base = entries[0]

    def with_schedule(schedule):
        hand = {'format': 'kinac-tuning-cache', 'version': 1, 'entries': []}
        for line, fn in ((3, 'sm'), (7, 'rs')):
            e = copy.deepcopy(base)
            e.update(key='reduction@%d:3' % line, function=fn,
                     schedule=schedule)
            hand['entries'].append(e)
        path = os.path.join(work, 'red-hand.json')
        write_json(path, hand)
        return run([kinac, kir, '--tuning-cache', path, '--emit=mlir-llvm'])

    default = run([kinac, kir, '--emit=mlir-llvm'])
    narrow = with_schedule({'vbits': 128, 'vectors': 1, 'grain': 65536})
    wide = with_schedule({'vbits': 128, 'vectors': 4, 'grain': 65536})
    single = with_schedule({'vbits': 0, 'vectors': 1, 'grain': 0})
    check(default.returncode == 0 and 'kina_rt_parallel_for' in
          default.stdout and single.returncode == 0 and
          'warning' not in single.stderr and
          'kina_rt_parallel_for' not in single.stdout,
          'reductions: grain=0 leaves no kina_rt_parallel_for (%s)' %
          single.stderr)
    check(default.returncode == 0 and 'vector<8xf32>' in default.stdout and
          'vector<16xf32>' not in default.stdout,
          'reductions: default tiles are vector<8xf32> (256 bits)')
    check(narrow.returncode == 0 and 'warning' not in narrow.stderr and
          'vector<4xf32>' in narrow.stdout and
          'vector<8xf32>' not in narrow.stdout,
          'reductions: vbits=128 vectors=1 gives vector<4xf32> only (%s)' %
          narrow.stderr)
    check(wide.returncode == 0 and 'warning' not in wide.stderr and
          'vector<16xf32>' in wide.stdout and
          'vector<8xf32>' not in wide.stdout,
          'reductions: vbits=128 vectors=4 gives vector<16xf32> tiles (%s)' %
          wide.stderr)


if __name__ == '__main__':
    main()
    print('%d failed' % len(FAILURES))
    sys.exit(1 if FAILURES else 0)
