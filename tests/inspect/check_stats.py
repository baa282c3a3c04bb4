#!/usr/bin/env python3
"""Checks `kinac --stats=json` (docs/inspecting.md) on programs whose
figures are known by hand:

- matmul [M, K] x [K, N] (symbolic dims bound by --stats-shape, and the
  same with static dims): 2 kernels (the fill of the result, the product),
  the product's FLOPs 2*M*K*N, bytes read 4*(M*K + K*N + M*N) (the
  accumulator is read), written 4*M*N; no intermediate buffer; the same at
  -O0 and -O2; without --stats-shape the dynamic figures are null;
- a row sum of [R, C]: R*C FLOPs; an elementwise chain fused into one
  kernel (FLOPs = elements x ops);
- the digits MLP at N=1797: 11 kernels, intermediates 4*N*(32+10)+8 bytes;
- the stage times name the stages --time-stages prints;
- --stats-file: written only when the compilation succeeds; an existing
  file is left untouched by a failing one;
- cuda (with --cuda, needs ptxas): registers and shared memory of every
  kernel equal those recorded in the cubins embedded in the object
  (EIATTR_REGCOUNT of .nv.info, the size of .nv.shared.<kernel> less the
  1 KiB system reserve of sm_80 and later), compared
  as multisets; the digits MLP is one kernel (kina-gpu-map-row-chains)
  with no stack, its statements the six ops of the forward.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print('FAIL: ' + what)


def stats(kinac, src, workdir, extra, name='m'):
    kir = os.path.join(workdir, name + '.kir')
    with open(kir, 'w') as f:
        f.write(src)
    out = os.path.join(workdir, name + '.json')
    cmd = [kinac, kir, '--stats=json', '--stats-file', out,
           '-o', os.path.join(workdir, name + '.o')] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('FAIL: %s\n%s' % (' '.join(cmd), r.stderr))
    with open(out) as f:
        return json.load(f)


MATMUL = '''module @mm
func @mm(%a: f32[M, K], %b: f32[K, N]) -> f32[M, N] {
  %c = matmul %a, %b
  return %c
}
'''
MATMUL_STATIC = MATMUL.replace('M, K', '64, 96').replace(
    'K, N', '96, 80').replace('M, N', '64, 80')
REDUCE = '''module @r
func @rows(%x: f32[R, C]) -> (f32[R], f32[R, C]) {
  %s = reduce_sum %x {axes = [1]}
  %e = exp %x
  %m = mul %e, 2.0
  %y = add %m, %x
  return %s, %y
}
'''


def check_matmul(kinac, work):
    M, K, N = 64, 96, 80
    for opt in ('-O0', '-O2'):
        for src, extra in ((MATMUL, ['--stats-shape', 'M=64,K=96,N=80']),
                           (MATMUL_STATIC, [])):
            doc = stats(kinac, src, work, [opt] + extra)
            check(doc['schema_version'] == 1 and doc['target'] == 'cpu',
                  'schema version and target')
            fn = doc['functions'][0]
            check(fn['name'] == 'mm' and fn['kernel_count'] == 2,
                  'matmul %s: 2 kernels, got %s' % (opt, fn['kernel_count']))
            check(fn['intermediate_buffers'] == 0 and
                  fn['intermediate_bytes'] == 0, 'matmul: no intermediates')
            fill, mm = fn['kernels']
            check(fill['op'] == 'linalg.fill' and fill['flops'] == 0 and
                  fill['bytes_written'] == 4 * M * N, 'matmul: the fill')
            check(mm['op'] == 'linalg.matmul', 'matmul: op %s' % mm['op'])
            check(mm['flops'] == 2 * M * K * N,
                  'matmul %s flops %s, expected %d' % (opt, mm['flops'],
                                                       2 * M * K * N))
            check(mm['iterations'] == M * K * N and mm['loops'] == 3,
                  'matmul iterations')
            check(mm['bytes_read'] == 4 * (M * K + K * N + M * N) and
                  mm['bytes_written'] == 4 * M * N,
                  'matmul bytes %s/%s' % (mm['bytes_read'],
                                          mm['bytes_written']))
            check([s['op'] for s in mm['statements']] == ['matmul'] and
                  mm['statements'][0]['line'] == 3 and
                  mm['statements'][0]['results'] == ['c'],
                  'matmul statements %s' % mm['statements'])
    doc = stats(kinac, MATMUL, work, [])
    mm = doc['functions'][0]['kernels'][1]
    check(mm['flops'] is None and mm['bytes_read'] is None and
          mm['flops_per_iteration'] == 2,
          'matmul without --stats-shape: null figures, got %s' % mm)
    check(doc['shapes'] == {}, 'no shapes bound')


def check_reduce(kinac, work):
    R, C = 300, 70
    doc = stats(kinac, REDUCE, work, ['--stats-shape', 'R=%d,C=%d' % (R, C)])
    kernels = doc['functions'][0]['kernels']
    ops = [[s['op'] for s in k['statements']] for k in kernels]
    check(ops == [['reduce_sum'], ['reduce_sum'], ['exp', 'mul', 'add']],
          'reduce: kernels %s' % ops)
    red, chain = kernels[1], kernels[2]
    check(red['flops'] == R * C and red['bytes_read'] == 4 * (R * C + R)
          and red['bytes_written'] == 4 * R, 'reduce figures %s' % red)
    check(chain['flops'] == 3 * R * C and chain['bytes_read'] == 4 * R * C
          and chain['bytes_written'] == 4 * R * C,
          'fused chain figures %s' % chain)


def check_mlp(kinac, work, mlp):
    N = 1797
    r = subprocess.run([kinac, mlp, '--stats=json', '--stats-shape',
                        'N=%d' % N, '-o', os.path.join(work, 'mlp.o')],
                       capture_output=True, text=True)
    check(r.returncode == 0, 'mlp: --stats=json to stderr')
    doc = json.loads(r.stderr)
    fn = doc['functions'][0]
    # Fills and matmuls of both layers, the bias+relu, and softmax's loop
    # over rows (kina-fuse-rows: two fills, max; kina-share-row-values:
    # exp once into the result's row, the sum of it, the scaling). The
    # intermediates: both products (the row loop writes the result anew)
    # and the row's max and sum, one float each on the stack.
    check(fn['kernel_count'] == 11, 'mlp kernels %s' % fn['kernel_count'])
    check(fn['intermediate_bytes'] == 4 * N * (32 + 10) + 4 + 4,
          'mlp intermediates %s' % fn['intermediate_bytes'])
    first = fn['kernels'][1]
    check(first['flops'] == 2 * N * 64 * 32, 'mlp layer 1 flops')
    stages = [s['stage'] for s in doc['stage_times']]
    for s in ('parse', 'sema', 'mlirgen', 'pipeline', 'mlir-translate',
              'llc'):
        check(s in stages, 'stage %s in %s' % (s, stages))
    check(all(s['ms'] >= 0 for s in doc['stage_times']), 'stage times')
    text = subprocess.run([kinac, mlp, '--stats', '--stats-shape', 'N=%d' % N,
                           '--emit=mlir-llvm', '-o', os.devnull],
                          capture_output=True, text=True).stderr
    check('function @forward: 11 kernels, 4 intermediate buffers of 301904 '
          'bytes' in text and '7360512' in text, 'mlp text:\n' + text)


def check_stats_file(kinac, work, mlp):
    bad = os.path.join(work, 'bad.kir')
    with open(bad, 'w') as f:
        f.write('func @f(%x: f32[4]) -> f32[4] {\n  %y = exp %x : i32[4]\n'
                '  return %y\n}\n')
    out = os.path.join(work, 'bad.json')
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([kinac, bad, '--stats=json', '--stats-file', out,
                        '-o', os.path.join(work, 'bad.o')],
                       capture_output=True, text=True)
    check(r.returncode == 1 and not os.path.exists(out),
          'failing compile writes no --stats-file')
    with open(out, 'w') as f:
        f.write('sentinel')
    subprocess.run([kinac, bad, '--stats=json', '--stats-file', out],
                   capture_output=True)
    check(open(out).read() == 'sentinel', 'existing --stats-file untouched')


def cubin_usage(obj):
    """(registers, shared bytes) of each kernel of each cubin in `obj`."""
    data = open(obj, 'rb').read()
    found = []
    start = 1  # skip the object's own header
    while True:
        off = data.find(b'\x7fELF\x02\x01\x01', start)
        if off < 0:
            return found
        start = off + 1
        e = data[off:]
        machine, = struct.unpack_from('<H', e, 0x12)
        if machine != 190:  # EM_CUDA
            continue
        shoff, = struct.unpack_from('<Q', e, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from('<HHH', e, 0x3a)
        secs = [struct.unpack_from('<IIQQQQIIQQ', e, shoff + k * shentsize)
                for k in range(shnum)]
        so = secs[shstrndx][4]

        def name(s):
            return e[so + s[0]:e.index(b'\0', so + s[0])].decode()
        regs, shared = [], {}
        for s in secs:
            n = name(s)
            # .nv.shared.<kernel>'s size includes the 1 KiB that sm_80 and
            # later reserve for the system (.nv.shared.reserved.0), which
            # ptxas -v's "bytes smem" leaves out (seen with CUDA 13's ptxas
            # on its own cubins).
            if n.startswith('.nv.shared.') and \
                    not n.startswith('.nv.shared.reserved.'):
                shared[n[len('.nv.shared.'):]] = max(0, s[5] - 1024)
            if n == '.nv.info':
                d, i = e[s[4]:s[4] + s[5]], 0
                while i + 4 <= len(d):
                    fmt, attr, size = struct.unpack_from('<BBH', d, i)
                    if fmt == 4:
                        if attr == 0x2f:  # EIATTR_REGCOUNT: symbol, count
                            regs.append(struct.unpack_from('<I', d, i + 8)[0])
                        i += 4 + size
                    else:
                        i += 4 if fmt != 4 else 4 + size
        for r in regs:
            found.append((r, sum(shared.values())))


def check_cuda(kinac, work, mlp):
    obj = os.path.join(work, 'mlp-cuda.o')
    r = subprocess.run([kinac, mlp, '--target=cuda', '--stats=json',
                        '-o', obj], capture_output=True, text=True)
    check(r.returncode == 0, 'cuda --stats: ' + r.stderr[-2000:])
    doc = json.loads(r.stderr)
    check(doc['resource_usage'] is True, 'cuda resource usage present')
    kernels = doc['functions'][0]['kernels']
    ours = sorted((k['registers'], k['shared_bytes']) for k in kernels)
    embedded = sorted(cubin_usage(obj))
    # One kernel: kina-gpu-map-row-chains runs the whole forward (two
    # matmuls by small weights, bias, relu, softmax) one warp per row, the
    # rows in workgroup memory (no stack: no local memory).
    check(len(ours) == 1 and ours == embedded,
          'cuda registers/shared: --stats %s, embedded cubins %s' % (
              ours, embedded))
    check(all(k['name'].startswith('@forward_kernel') for k in kernels),
          'cuda kernel names')
    check(kernels[0]['stack_bytes'] == 0, 'cuda forward kernel: no stack')
    ops = [s['op'] for s in kernels[0]['statements']]
    check(ops == ['matmul', 'add', 'relu', 'matmul', 'add', 'softmax'],
          'cuda forward kernel statements %s' % ops)
    # The launched kernels, the scalar twins and the fallbacks of cuBLASLt
    # calls partition the list; a twin has its vector kernel's figures and
    # is no twin itself; fallbacks exist exactly when there are calls.
    fn = doc['functions'][0]
    twins = [k for k in kernels if k['scalar_twin_of'] is not None]
    fallbacks = [k for k in kernels if k['library_fallback']
                 and k['scalar_twin_of'] is None]
    check(fn['scalar_twin_count'] == len(twins) and
          fn['kernel_count'] + len(twins) + len(fallbacks) == len(kernels),
          'cuda kernel_count %s + twins %s + fallbacks %s != %s kernels' % (
              fn['kernel_count'], len(twins), len(fallbacks), len(kernels)))
    for k in twins:
        primary = kernels[k['scalar_twin_of']]
        check(primary['scalar_twin_of'] is None and
              primary['index'] < k['index'] and
              all(primary[f] == k[f] for f in
                  ('flops', 'bytes_read', 'bytes_written', 'statements')),
              'cuda twin %d matches its vector kernel' % k['index'])
    check((fn['library_call_count'] > 0) == bool(fallbacks),
          'cuda library calls %s, fallback kernels %d' % (
              fn['library_call_count'], len(fallbacks)))
    text = subprocess.run([kinac, mlp, '--target=cuda', '--stats',
                           '--emit=mlir-gpu', '-o', os.devnull],
                          capture_output=True, text=True).stderr
    gpu = subprocess.run([kinac, mlp, '--target=cuda', '--emit=mlir-gpu',
                          '-o', '-'], capture_output=True, text=True).stdout
    calls = gpu.count('call @kina_rt_gpu_matmul(')
    check(calls == fn['library_call_count'],
          'cuda library calls: stats %s, --emit=mlir-gpu %d' % (
              fn['library_call_count'], calls))
    check('function @forward: %d kernel' % fn['kernel_count'] in text,
          'cuda text stats name the launched kernels: ' + text[:300])


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--kinac', required=True)
    p.add_argument('--mlp', required=True, help='samples/digits/mlp.kir')
    p.add_argument('--cuda', action='store_true')
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        check_matmul(args.kinac, work)
        check_reduce(args.kinac, work)
        check_mlp(args.kinac, work, args.mlp)
        check_stats_file(args.kinac, work, args.mlp)
        if args.cuda:
            check_cuda(args.kinac, work, args.mlp)
    if FAILURES:
        sys.exit('%d checks failed' % len(FAILURES))
    print('check_stats: all checks passed%s' % (
        '' if args.cuda else ' (cuda not checked: no ptxas)'))


if __name__ == '__main__':
    main()
