#!/usr/bin/python3
"""Trains the digits sample's MLP with scikit-learn and writes its data files.

The model is sklearn's MLPClassifier (one hidden layer of 32 ReLU units,
softmax output, adam, random_state=0) trained on sklearn's bundled 8x8 digits
set (1797 images, no network needed), inputs scaled to [0, 1]. The script
writes raw little-endian binaries into samples/digits/data/ (no headers;
dtype and shape are listed in data/manifest.txt, which it also writes): the
float32 images, the int64 labels, the weights cast to float32, and sklearn's
own predict_proba for the exact float32 weights that are shipped (computed in
float64 by sklearn after its coefs_/intercepts_ are replaced by the
float32-rounded values), stored as float32. It then checks a float32 NumPy
forward pass (x@w1+b1, relu, @w2+b2, stable softmax) against that reference
(max abs diff < 1e-6, same argmax on every image) and prints the accuracy.
Deterministic: two runs give byte-identical files.
Run with Debian's interpreter: /usr/bin/python3 samples/digits/train.py
"""

import os
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def write(name, array, dtype, description, manifest):
    """Writes `array` as raw little-endian `dtype` to DATA_DIR/name."""
    a = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    with open(os.path.join(DATA_DIR, name), "wb") as f:
        f.write(a.tobytes(order="C"))
    shape = ", ".join(str(d) for d in a.shape)
    kind = f"{np.dtype(dtype).name}[{shape}]"
    manifest.append(f"{name:<14} {kind:<18} {description}")


def softmax_f32(logits):
    """Numerically stable softmax over the last axis, in float32."""
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main():
    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)  # [1797, 64] in [0, 1]
    labels = digits.target.astype(np.int64)  # [1797]
    x64 = images.astype(np.float64)  # exactly the float32 values

    model = MLPClassifier(hidden_layer_sizes=(32,), activation="relu",
                          solver="adam", random_state=0, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(x64, labels)
    assert list(model.classes_) == list(range(10)), model.classes_
    assert model.out_activation_ == "softmax", model.out_activation_

    # Ship float32 weights, and make sklearn's reference use exactly them.
    w1, w2 = (c.astype(np.float32) for c in model.coefs_)
    b1, b2 = (b.astype(np.float32) for b in model.intercepts_)
    model.coefs_ = [w1.astype(np.float64), w2.astype(np.float64)]
    model.intercepts_ = [b1.astype(np.float64), b2.astype(np.float64)]
    proba64 = model.predict_proba(x64)  # [1797, 10], float64
    proba = proba64.astype(np.float32)

    os.makedirs(DATA_DIR, exist_ok=True)
    manifest = [
        "# Data of the digits sample, written by samples/digits/train.py.",
        "# Raw little-endian arrays, row-major (C order), no header.",
        "# file         dtype[shape]       meaning",
    ]
    write("images.bin", images, np.float32,
          "digits inputs / 16 (values in [0, 1]), one row per image", manifest)
    write("labels.bin", labels, np.int64, "true digit of each image", manifest)
    write("w1.bin", w1, np.float32, "coefs_[0] (input -> hidden)", manifest)
    write("b1.bin", b1, np.float32, "intercepts_[0]", manifest)
    write("w2.bin", w2, np.float32, "coefs_[1] (hidden -> output)", manifest)
    write("b2.bin", b2, np.float32, "intercepts_[1]", manifest)
    write("proba.bin", proba, np.float32,
          "sklearn predict_proba with the float32 weights above", manifest)
    with open(os.path.join(DATA_DIR, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")

    # Independent float32 forward pass, as kinac's mlp.kir computes it.
    hidden = np.maximum(images @ w1 + b1, np.float32(0))
    ours = softmax_f32(hidden @ w2 + b2)
    assert ours.dtype == np.float32
    max_diff = float(np.abs(ours.astype(np.float64) - proba64).max())
    mismatches = int((ours.argmax(axis=1) != proba64.argmax(axis=1)).sum())
    # main.c takes sklearn's argmax from the float32 file: it must not differ.
    mismatches += int((proba.argmax(axis=1) != proba64.argmax(axis=1)).sum())
    accuracy = float((proba64.argmax(axis=1) == labels).mean())
    print(f"iterations={model.n_iter_} loss={model.loss_:.6f}")
    print(f"train accuracy={accuracy:.4f}")
    print(f"float32 numpy vs predict_proba: max_abs_diff={max_diff:.3e} "
          f"argmax_mismatches={mismatches}")
    if max_diff >= 1e-6 or mismatches != 0:
        print("error: the float32 forward pass does not match sklearn",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
