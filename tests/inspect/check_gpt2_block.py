#!/usr/bin/env python3
"""Runs samples/gpt2/block.kir (one GPT-2 small block, docs/inspecting.md)
on random weights and T tokens and compares it with a NumPy reference
written from GPT-2's definition (pre-norm; 12 heads of 64; causal
softmax attention scaled by 1/sqrt(64); MLP 768-3072-768 with the tanh
gelu; two residuals), through `kinac --emit=shared` and kina-run.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def reference(x, w):
    (ln1_g, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc,
     w_out, b_out) = w
    T = x.shape[0]
    qkv = layer_norm(x, ln1_g, ln1_b) @ w_qkv + b_qkv
    q, k, v = (qkv[:, i * 768:(i + 1) * 768].reshape(T, 12, 64)
               .transpose(1, 0, 2) for i in range(3))
    s = q @ k.transpose(0, 2, 1) / 8.0
    s = np.where(np.tril(np.ones((T, T), bool)), s, -1e9)
    s = np.exp(s - s.max(-1, keepdims=True))
    p = s / s.sum(-1, keepdims=True)
    o = (p @ v).transpose(1, 0, 2).reshape(T, 768)
    x1 = x + o @ w_proj + b_proj
    h = gelu_tanh(layer_norm(x1, ln2_g, ln2_b) @ w_fc + b_fc)
    return x1 + h @ w_out + b_out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--kinac', required=True)
    p.add_argument('--kina-run', required=True)
    p.add_argument('--block', required=True)
    p.add_argument('--tokens', type=int, default=24)
    args = p.parse_args()
    rng = np.random.default_rng(16)
    T = args.tokens
    shapes = [(768,), (768,), (768, 2304), (2304,), (768, 768), (768,),
              (768,), (768,), (768, 3072), (3072,), (3072, 768), (768,)]
    x = rng.standard_normal((T, 768)).astype(np.float32)
    w = []
    for i, s in enumerate(shapes):
        # GPT-2's initialisation scale; layer_norm gains near 1.
        a = 0.02 * rng.standard_normal(s)
        if i in (0, 6):
            a = 1 + 5 * a
        w.append(a.astype(np.float32))
    want = reference(x.astype(np.float64), [a.astype(np.float64) for a in w])
    with tempfile.TemporaryDirectory() as work:
        lib = os.path.join(work, 'block.so')
        subprocess.run([args.kinac, args.block, '--emit=shared', '-o', lib],
                       check=True)
        ins = []
        for i, a in enumerate([x] + w):
            path = os.path.join(work, 'in%d.npy' % i)
            np.save(path, a)
            ins += ['--in', path]
        out = os.path.join(work, 'y.npy')
        subprocess.run([args.kina_run, lib, 'block'] + ins + ['--out', out],
                       check=True)
        got = np.load(out)
    err = np.abs(got.astype(np.float64) - want).max()
    print('gpt2 block: T=%d, shape %s, max |kinac - numpy| = %.3g' % (
        T, got.shape, err))
    if got.shape != (T, 768) or not err < 1e-3:
        sys.exit('FAIL: the GPT-2 block differs from the NumPy reference')


if __name__ == '__main__':
    main()
