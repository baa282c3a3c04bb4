#!/usr/bin/env python3
"""Checks cuda autotuning's plan route (docs/autotune.md, "cuda").

Here (kinac and ptxas, no GPU needed):
- `kinac --target=cuda --autotune --autotune-plan DIR` on a module with an
  elementwise chain, a short-row softmax and a matmul writes DIR/plan.json
  (format, ops keyed elementwise@/rows@/matmul@ with their spaces, function,
  shapes, dtype, --tune-shape bindings) and one shared library per
  candidate, each a kinac library whose manifest (kina-run --manifest)
  exports the op's function; every op's default schedule is a candidate,
  every schedule is valid for its space; the softmax's 9 row schedules
  make the same code for rows of 32 and are left out but one; fills (the
  matmul's zero init) have no entry of their own.
- Results as kina-run --tune-plan writes them (made here, with a chosen
  fastest candidate per op) imported with --tuning-results and
  --tuning-cache: the cache records the fastest schedule of each op with
  the GPU's name and arch, the median and the default's median; the build
  shows the schedules in --emit=mlir-gpu (block 128 on the chain's launch,
  cuBLASLt algorithm 3 in the call's flags, 3 << 8 | 0) and --emit=ptx
  (the kernel's .reqntid/.maxntid 128); a build from the cache alone gives
  the same --emit=mlir-gpu.
- Entries of another GPU (--gpu-model) or arch (--gpu-arch=sm_80) are
  ignored with a warning naming the file and entry; results of another
  GPU arch are recorded but not used (warning).
- Malformed results (JSON syntax, a mistyped median, a schedule outside
  its space, a candidate index out of range, another module) are errors
  naming the file and line:column or field, exit 1, no output written, the
  cache untouched.
- Without a GPU, `--target=cuda --autotune` fails (exit 1) naming the plan
  route.
- kina-run --tune-plan's runner, with a stand-in libcuda.so.1 (the device
  queries only) on a plan of cpu libraries: each candidate measured in a
  child process, a missing library recorded as an error, results.json with
  the plan and the device; a missing plan is an error.

With --measure-plan DIR (on the GPU machine, scripts/gpu-check.sh): runs
`kina-run --tune-plan DIR/plan.json` and checks results.json: every
candidate measured (median > 0), the GPU named, its arch sm_XX.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print('FAIL: ' + what)
    else:
        print('ok: ' + what)


SOURCE = '''module @tune
func @chain(%x: f32[N], %y: f32[N]) -> f32[N] {
  %a = mul %x, %y
  %b = tanh %a
  return %b
}
func @sm(%x: f32[N, 32]) -> f32[N, 32] {
  %s = softmax %x {axis = -1}
  return %s
}
func @mm(%a: f32[N, 64], %b: f32[64, 32]) -> f32[N, 32] {
  %c = matmul %a, %b
  return %c
}
'''

SPACES = {'elementwise': 'cuda.elementwise', 'rows': 'cuda.rows',
          'matmul': 'cuda.matmul', 'reduction': 'cuda.reduction'}
DEFAULTS = {'cuda.elementwise': {'block': 256},
            'cuda.rows': {'threads': 512, 'per_thread': 32},
            'cuda.reduction': {'block': 256}, 'cuda.matmul': {'algo': 0}}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def build_plan(kinac, kir, plan_dir, shape='N=4096'):
    """kinac --autotune-plan; returns the completed process."""
    return run([kinac, kir, '--target=cuda', '-O2', '--autotune',
                '--tune-shape', shape, '--autotune-plan', plan_dir])


def fake_results(plan, fastest):
    """Results in kina-run --tune-plan's format: every candidate 1 ms but
    the one of each op whose schedule `fastest(op, schedule)` names."""
    ms = []
    for i, c in enumerate(plan['candidates']):
        t = 0.5e-3 if fastest(plan['ops'][c['op']], c['schedule']) else 1e-3
        ms.append({'candidate': i, 'median_s': t, 'min_s': t, 'runs': 9})
    return {'format': 'kinac-tuning-results', 'version': 1, 'plan': plan,
            'gpu': {'device': 0, 'name': 'NVIDIA H200', 'arch': 'sm_90'},
            'measurements': ms}


def write_json(path, obj):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=2)


def check_plan(kinac, kina_run, work):
    kir = os.path.join(work, 'tune.kir')
    with open(kir, 'w') as f:
        f.write(SOURCE)
    plan_dir = os.path.join(work, 'plan')
    r = build_plan(kinac, kir, plan_dir)
    check(r.returncode == 0, 'plan built (%s)' % r.stderr[-1500:])
    if r.returncode != 0:
        return None
    with open(os.path.join(plan_dir, 'plan.json')) as f:
        plan = json.load(f)
    check(plan.get('format') == 'kinac-tuning-plan' and
          plan.get('version') == 1 and plan.get('module') == 'tune' and
          plan.get('target') == 'cuda' and plan.get('gpu_arch') == 'sm_90',
          'plan header (format, module, target, arch)')
    ops = plan['ops']
    kinds = {o['key'].split('@')[0]: o for o in ops}
    check({'elementwise', 'rows', 'matmul'} <= set(kinds),
          'plan ops cover the chain, the softmax rows and the matmul: %s' %
          [o['key'] for o in ops])
    for o in ops:
        kind = o['key'].split('@')[0]
        check(o['space'] == SPACES.get(kind) and o['space_version'] == 1 and
              o['bindings'] == {'N': 4096} and o['dtype'] == 'f32' and
              o['shapes'] and o['function'] in ('chain', 'sm', 'mm'),
              'op %s: space, bindings, dtype, shapes, function' % o['key'])
    chain = [o for o in ops if o['function'] == 'chain']
    check(len(chain) == 1 and
          re.fullmatch(r'elementwise@\d+:\d+', chain[0]['key']) is not None,
          'the fused chain is one elementwise kernel: %s' %
          [o['key'] for o in chain])
    cands = plan['candidates']
    by_op = {}
    for c in cands:
        by_op.setdefault(c['op'], []).append(c)
        lib = os.path.join(plan_dir, c['library'])
        ok = os.path.exists(lib)
        if ok:
            with open(lib, 'rb') as f:
                ok = f.read(4) == b'\x7fELF'
        check(ok, 'candidate %s is a shared library' % c['library'])
    for i, o in enumerate(ops):
        mine = by_op.get(i, [])
        defaults = [c for c in mine if c['default']]
        check(len(defaults) == 1 and
              defaults[0]['schedule'] == DEFAULTS[o['space']],
              'op %s: its default schedule is a candidate' % o['key'])
        for c in mine:
            check(set(c['schedule']) == set(DEFAULTS[o['space']]),
                  'op %s: schedule %s names its space\'s parameters' %
                  (o['key'], c['schedule']))
    rows = [i for i, o in enumerate(ops) if o['key'].startswith('rows@')]
    check(rows and len(by_op.get(rows[0], [])) == 1 and
          '(8 left out' in r.stderr,
          'rows of 32: the 9 schedules make one kernel, 8 left out (%s)' %
          r.stderr.strip().splitlines()[-1])
    mm = [i for i, o in enumerate(ops) if o['key'].startswith('matmul@')]
    check(mm and len(by_op.get(mm[0], [])) == 4,
          'matmul: 4 cuBLASLt algorithm candidates')
    check(len(ops) == 3, 'three kernels to tune (no fill): %s' %
          [o['key'] for o in ops])
    check('budget_s' not in plan, 'no --autotune-budget: no budget_s')
    # --autotune-budget: building stops after the defaults once spent, and
    # what is left (here nothing) bounds kina-run's measuring.
    budget_dir = os.path.join(work, 'plan-budget')
    rb = run([kinac, kir, '--target=cuda', '-O2', '--autotune',
              '--tune-shape', 'N=4096', '--autotune-budget', '0.001',
              '--autotune-plan', budget_dir])
    bplan = {}
    if rb.returncode == 0:
        with open(os.path.join(budget_dir, 'plan.json')) as f:
            bplan = json.load(f)
    check(rb.returncode == 0 and bplan.get('budget_s') == 0 and
          len(bplan['candidates']) == len(bplan['ops']) and
          all(c['default'] for c in bplan['candidates']),
          '--autotune-budget spent: the defaults only, budget_s 0 (%s)' %
          rb.stderr.strip()[-600:])
    # kina-run reads each library's manifest without a GPU.
    first = os.path.join(plan_dir, cands[0]['library'])
    m = run([kina_run, first, '--manifest'])
    check(m.returncode == 0 and ops[cands[0]['op']]['function'] in m.stdout,
          'kina-run --manifest of a candidate names its function (%s)' %
          m.stderr.strip())
    return kir, plan_dir, plan


def check_import(kinac, work, kir, plan_dir, plan):
    def fastest(op, schedule):
        return (op['space'] == 'cuda.elementwise' and op['function'] ==
                'chain' and schedule == {'block': 128}) or \
               (op['space'] == 'cuda.matmul' and schedule == {'algo': 3})

    results = os.path.join(plan_dir, 'results.json')
    write_json(results, fake_results(plan, fastest))
    cache = os.path.join(work, 'cuda-cache.json')
    mlir = os.path.join(work, 'tuned.mlir')
    r = run([kinac, kir, '--target=cuda', '-O2', '--tuning-results', results,
             '--tuning-cache', cache, '--emit=mlir-gpu', '-o', mlir])
    check(r.returncode == 0 and os.path.exists(cache),
          'results imported (%s)' % r.stderr.strip()[-1500:])
    if r.returncode != 0:
        return None
    with open(cache) as f:
        entries = json.load(f)['entries']
    chain = [e for e in entries if e.get('function') == 'chain']
    check(len(chain) == 1 and chain[0]['schedule'] == {'block': 128} and
          chain[0]['gpu'] == 'NVIDIA H200' and
          chain[0]['processor'] == 'sm_90' and
          chain[0]['target'] == 'cuda' and
          chain[0]['median_s'] == 0.5e-3 and
          chain[0]['default_median_s'] == 1e-3 and
          chain[0]['bindings'] == {'N': 4096} and chain[0]['module'] == 'tune',
          'cache entry of the chain: fastest block, GPU, medians, sizes')
    mm = [e for e in entries if e['space'] == 'cuda.matmul']
    check(len(mm) == 1 and mm[0]['schedule'] == {'algo': 3},
          'cache entry of the matmul: algorithm 3')
    with open(mlir) as f:
        tuned = f.read()
    base = run([kinac, kir, '--target=cuda', '-O2', '--emit=mlir-gpu'])
    pat = r'gpu\.launch_func\s+@chain_kernel\S*\s.*threads in \(%c(\d+)'
    check(set(re.findall(pat, base.stdout)) == {'256'} and
          set(re.findall(pat, tuned)) == {'128'},
          'chain launch: 256 threads by default, 128 tuned')
    check('%c768_i32' in tuned and '%c768_i32' not in base.stdout,
          'matmul: cuBLASLt algorithm 3 in the call\'s flags (768)')
    ptx = run([kinac, kir, '--target=cuda', '-O2', '--emit=ptx',
               '--tuning-cache', cache])
    chain_ptx = ptx.stdout[ptx.stdout.find('chain_kernel'):]
    check(ptx.returncode == 0 and
          re.search(r'\.(reqntid|maxntid)\s+128\b', chain_ptx) is not None,
          'PTX of the chain kernel: 128 threads (%s)' % ptx.stderr.strip())
    again = run([kinac, kir, '--target=cuda', '-O2', '--emit=mlir-gpu',
                 '--tuning-cache', cache])
    check(again.returncode == 0 and again.stdout == tuned and
          'warning' not in again.stderr,
          'a build from the cache alone is the imported build (%s)' %
          again.stderr.strip())
    # Foreign entries.
    for extra, what in ((['--gpu-model', 'NVIDIA H100'],
                         "GPU 'NVIDIA H200', not 'NVIDIA H100'"),
                        (['--gpu-arch=sm_80'], "processor 'sm_90', not 'sm_80'")):
        o = run([kinac, kir, '--target=cuda', '-O2', '--emit=mlir-gpu',
                 '--tuning-cache', cache] + extra)
        check(o.returncode == 0 and what in o.stderr and
              "tuning cache '%s': entry" % cache in o.stderr and
              set(re.findall(pat, o.stdout)) == {'256'},
              'foreign entries (%s) ignored with a warning' % ' '.join(extra))
    # Results of another arch: recorded, not used.
    other = fake_results(plan, fastest)
    other['gpu'] = {'device': 0, 'name': 'NVIDIA A100', 'arch': 'sm_80'}
    other_path = os.path.join(work, 'other-results.json')
    write_json(other_path, other)
    o = run([kinac, kir, '--target=cuda', '-O2', '--emit=mlir-gpu',
             '--tuning-results', other_path])
    check(o.returncode == 0 and 'NVIDIA A100' in o.stderr and
          'not used' in o.stderr and
          set(re.findall(pat, o.stdout)) == {'256'},
          'results of another GPU arch are not used (%s)' % o.stderr.strip())
    return cache, results


def check_malformed(kinac, work, kir, plan, cache):
    with open(cache, 'rb') as f:
        before = f.read()

    def bad(name, text, expect):
        path = os.path.join(work, name)
        with open(path, 'w') as f:
            f.write(text)
        out = os.path.join(work, name + '.o')
        r = run([kinac, kir, '--target=cuda', '-O2', '--tuning-results', path,
                 '--tuning-cache', cache, '-o', out])
        with open(cache, 'rb') as f:
            same = f.read() == before
        check(r.returncode == 1 and re.search(expect, r.stderr) is not None
              and not os.path.exists(out) and same,
              'malformed results %s: located error, no output, cache kept '
              '(%s)' % (name, r.stderr.strip()))

    good = fake_results(plan, lambda op, s: False)
    bad('syntax.json', '{"format": "kinac-tuning-results",\n  "version": 1,'
        '\n  "plan": {]\n}', r'syntax\.json:3:\d+: malformed tuning results')
    typed = json.loads(json.dumps(good))
    typed['measurements'][1]['median_s'] = 'fast'
    bad('typed.json', json.dumps(typed),
        r'typed\.json: malformed tuning results: measurements\[1\]\.median_s:'
        r' not a number')
    outside = json.loads(json.dumps(good))
    outside['plan']['candidates'][0]['schedule'] = {
        k: 999 for k in outside['plan']['candidates'][0]['schedule']}
    bad('outside.json', json.dumps(outside),
        r'outside\.json: malformed tuning results: plan\.candidates\[0\]\.'
        r'schedule: .* is 999, not one of')
    index = json.loads(json.dumps(good))
    index['measurements'][0]['candidate'] = 10000
    bad('index.json', json.dumps(index),
        r'measurements\[0\]\.candidate: the plan has no candidate 10000')
    module = json.loads(json.dumps(good))
    module['plan']['module'] = 'other'
    bad('module.json', json.dumps(module),
        r'module\.json: the tuning results are for module @other, not @tune')
    bad('format.json', json.dumps({'format': 'x'}),
        r'format\.json: malformed tuning results: format')


FAKE_DRIVER = r'''
#include <string.h>
int cuInit(unsigned flags) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetName(char *s, int len, int d) {
  strncpy(s, "Fake GPU", len); return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
  *v = attr == 75 ? 9 : 0; return 0; }
'''

CPU_SOURCE = '''module @cpu
func @f(%x: f32[N]) -> f32[N] {
  %y = exp %x
  return %y
}
'''


def check_runner_here(kinac, kina_run, work):
    """kina-run --tune-plan's runner without a GPU: a stand-in libcuda.so.1
    (the five device queries kina-run makes) and a plan of cpu libraries
    (the runner does not care which target a library has): every candidate
    is measured in a child kina-run, a crashing one (a missing library) is
    recorded with its error, the results name the device."""
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        print('skip: no C compiler for the stand-in CUDA driver')
        return
    drv = os.path.join(work, 'fakecuda')
    os.makedirs(drv)
    with open(os.path.join(drv, 'f.c'), 'w') as f:
        f.write(FAKE_DRIVER)
    r = run([cc, '-shared', '-fPIC', '-o', os.path.join(drv, 'libcuda.so.1'),
             os.path.join(drv, 'f.c')])
    check(r.returncode == 0, 'stand-in libcuda.so.1 built (%s)' % r.stderr)
    plan_dir = os.path.join(work, 'cpu-plan')
    os.makedirs(plan_dir)
    kir = os.path.join(plan_dir, 'cpu.kir')
    with open(kir, 'w') as f:
        f.write(CPU_SOURCE)
    r = run([kinac, kir, '-O2', '--emit=shared', '-o',
             os.path.join(plan_dir, 'c000.so')])
    check(r.returncode == 0, 'cpu library built (%s)' % r.stderr)
    plan = {'format': 'kinac-tuning-plan', 'version': 1, 'module': 'cpu',
            'target': 'cuda', 'gpu_arch': 'sm_90', 'warmup': 1, 'repeat': 3,
            'max_seconds': 1,
            'ops': [{'key': 'elementwise@3:3', 'space': 'cuda.elementwise',
                     'space_version': 1, 'function': 'f',
                     'shapes': 'memref<?xf32>', 'dtype': 'f32',
                     'bindings': {'N': 1000}}],
            'candidates': [
                {'op': 0, 'schedule': {'block': 256}, 'library': 'c000.so',
                 'default': True},
                {'op': 0, 'schedule': {'block': 128}, 'library': 'gone.so',
                 'default': False}]}
    write_json(os.path.join(plan_dir, 'plan.json'), plan)
    env = dict(os.environ, LD_LIBRARY_PATH=drv)
    info = run([kina_run, '--gpu-info'], env=env)
    check(info.returncode == 0 and '"Fake GPU"' in info.stdout and
          '"sm_90"' in info.stdout, 'kina-run --gpu-info (%s)' % info.stdout)
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'plan.json')],
            env=env)
    check(r.returncode == 0, 'kina-run --tune-plan exits 0 (%s)' %
          r.stderr.strip()[-800:])
    path = os.path.join(plan_dir, 'results.json')
    if not os.path.exists(path):
        check(False, 'results.json written')
        return
    with open(path) as f:
        res = json.load(f)
    ms = res['measurements']
    check(res['format'] == 'kinac-tuning-results' and res['plan'] == plan and
          res['gpu'] == {'device': 0, 'name': 'Fake GPU', 'arch': 'sm_90'},
          'results: format, the plan, the device')
    check(len(ms) == 2 and ms[0].get('median_s', 0) > 0 and
          ms[0].get('runs', 0) >= 1 and 'error' in ms[1] and
          'median_s' not in ms[1],
          'the candidate measured, the missing library recorded: %s' % ms)
    # The budget: defaults first whatever the order, then the others while
    # it lasts. A non-default listed before the default; --budget of a
    # microsecond measures the default only and records the rest skipped.
    plan['candidates'] = [
        {'op': 0, 'schedule': {'block': 128}, 'library': 'c000.so',
         'default': False},
        {'op': 0, 'schedule': {'block': 256}, 'library': 'c000.so',
         'default': True},
        {'op': 0, 'schedule': {'block': 512}, 'library': 'c000.so',
         'default': False}]
    write_json(os.path.join(plan_dir, 'plan.json'), plan)
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'plan.json'),
             '--budget', '0.000001'], env=env)
    with open(path) as f:
        ms = json.load(f)['measurements']
    check(r.returncode == 0 and [m['candidate'] for m in ms] == [1, 0, 2] and
          ms[0].get('median_s', 0) > 0 and
          all(m.get('skipped') == 'budget' and 'median_s' not in m
              for m in ms[1:]) and 'not measured' in r.stderr,
          '--budget: the default measured first, the rest skipped: %s (%s)' %
          (ms, r.stderr.strip()[-400:]))
    # The plan's budget_s (kinac --autotune-budget's rest) does the same;
    # without a budget every candidate is measured, each progress line
    # with its op's best so far.
    plan['budget_s'] = 0
    write_json(os.path.join(plan_dir, 'plan.json'), plan)
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'plan.json')],
            env=env)
    with open(path) as f:
        ms = json.load(f)['measurements']
    check(r.returncode == 0 and sum('skipped' in m for m in ms) == 2,
          'plan budget_s 0: only the default measured: %s' % ms)
    del plan['budget_s']
    write_json(os.path.join(plan_dir, 'plan.json'), plan)
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'plan.json')],
            env=env)
    with open(path) as f:
        ms = json.load(f)['measurements']
    check(r.returncode == 0 and all(m.get('median_s', 0) > 0 for m in ms) and
          r.stderr.count(', best ') == 3,
          'no budget: every candidate measured, best so far shown: %s (%s)' %
          (ms, r.stderr.strip()[-600:]))
    plan['budget_s'] = 'soon'
    write_json(os.path.join(plan_dir, 'plan.json'), plan)
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'plan.json')],
            env=env)
    check(r.returncode == 1 and 'budget_s' in r.stderr,
          'a malformed budget_s is an error (%s)' % r.stderr.strip())
    r = run([kina_run, '--tune-plan', os.path.join(plan_dir, 'nope.json')])
    check(r.returncode == 1 and 'cannot read the tuning plan' in r.stderr,
          'a missing plan is an error (%s)' % r.stderr.strip())


def measure_plan(kina_run, plan_dir):
    """The GPU part: kina-run --tune-plan on a prebuilt plan."""
    plan_path = os.path.join(plan_dir, 'plan.json')
    with open(plan_path) as f:
        plan = json.load(f)
    r = run([kina_run, '--tune-plan', plan_path])
    check(r.returncode == 0, 'kina-run --tune-plan exits 0 (%s)' %
          r.stderr.strip()[-2000:])
    if r.returncode != 0:
        return
    with open(os.path.join(plan_dir, 'results.json')) as f:
        res = json.load(f)
    ms = res.get('measurements', [])
    check(res.get('format') == 'kinac-tuning-results' and
          res.get('plan') == plan, 'results carry the plan')
    check(res['gpu'].get('name') and
          re.fullmatch(r'sm_\d+', res['gpu'].get('arch', '')) is not None,
          'results name the GPU: %s' % res.get('gpu'))
    ms = sorted(ms, key=lambda m: m['candidate'])  # defaults ran first
    check(len(ms) == len(plan['candidates']) and
          all(m.get('median_s', 0) > 0 for m in ms),
          'every candidate measured: %d of %d' %
          (sum(1 for m in ms if m.get('median_s', 0) > 0),
           len(plan['candidates'])))
    for i, o in enumerate(plan['ops']):
        times = {json.dumps(c['schedule'], sort_keys=True):
                 ms[j].get('median_s') for j, c in
                 enumerate(plan['candidates']) if c['op'] == i}
        print('  %s (@%s): %s' % (o['key'], o['function'], ', '.join(
            '%s %.4f ms' % (s, t * 1e3) for s, t in times.items() if t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kinac')
    ap.add_argument('--kina-run', required=True)
    ap.add_argument('--measure-plan', metavar='DIR',
                    help='GPU machine: measure this prebuilt plan')
    ap.add_argument('--build-plan', metavar='DIR',
                    help='only build the plan of the test module into DIR '
                         '(scripts/gpu-artefacts.sh)')
    args = ap.parse_args()
    if args.measure_plan:
        measure_plan(args.kina_run, args.measure_plan)
    elif args.build_plan:
        os.makedirs(args.build_plan, exist_ok=True)
        kir = os.path.join(args.build_plan, 'tune.kir')
        with open(kir, 'w') as f:
            f.write(SOURCE)
        r = build_plan(args.kinac, kir, args.build_plan)
        check(r.returncode == 0, 'plan built (%s)' % r.stderr[-1500:])
    else:
        work = tempfile.mkdtemp(prefix='kina-autotune-cuda-')
        planned = check_plan(args.kinac, args.kina_run, work)
        if planned:
            kir, plan_dir, plan = planned
            imported = check_import(args.kinac, work, kir, plan_dir, plan)
            if imported:
                check_malformed(args.kinac, work, kir, plan, imported[0])
        check_runner_here(args.kinac, args.kina_run, work)
        gpu = run([args.kina_run, '--gpu-info'])
        if gpu.returncode != 0:
            r = run([args.kinac, os.path.join(work, 'tune.kir'),
                     '--target=cuda', '-O2', '--autotune', '--tune-shape',
                     'N=64', '-o', os.path.join(work, 'direct.o')])
            check(r.returncode == 1 and '--autotune-plan' in r.stderr and
                  'kina-run --tune-plan' in r.stderr and
                  not os.path.exists(os.path.join(work, 'direct.o')),
                  'no GPU: --autotune names the plan route (%s)' %
                  r.stderr.strip())
        if not FAILURES:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print('%d failure(s)' % len(FAILURES))
        sys.exit(1)
    print('all checks passed')


if __name__ == '__main__':
    main()
