"""`kinac a.kir b.kir --emit=shared`: one library with one merged manifest,
every function served by kina.load; a name defined in two modules is an
error located at both definitions, and no library is written."""

import os
import subprocess

import numpy as np
import pytest

import kina

A = """module @a

func @double(%x: f32[N]) -> f32[N] {
  %y = add %x, %x
  return %y
}
"""

B = """module @b

func @negate(%x: i32[N, M]) -> i32[N, M] {
  %y = neg %x
  return %y
}
"""

CLASH = """module @c

# another @double
func @double(%x: f64[N]) -> f64[N] {
  %y = mul %x, %x
  return %y
}
"""


def kinac():
    path = os.environ.get("KINAC")
    if not path:
        pytest.fail("set KINAC (ctest does)")
    return path


def test_two_modules_one_library(tmp_path):
    (tmp_path / "a.kir").write_text(A)
    (tmp_path / "b.kir").write_text(B)
    lib = tmp_path / "libkernels.so"
    subprocess.run([kinac(), str(tmp_path / "a.kir"), str(tmp_path / "b.kir"),
                    "--emit=shared", "-o", str(lib)], check=True)
    m = kina.load(lib)
    assert m.name == "a+b"
    assert list(m.functions) == ["double", "negate"]
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(m.double(x[::-1]), 2 * x[::-1])
    v = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(m.negate(v.T), -v.T)


def test_name_in_two_modules(tmp_path):
    (tmp_path / "a.kir").write_text(A)
    (tmp_path / "c.kir").write_text(CLASH)
    lib = tmp_path / "clash.so"
    proc = subprocess.run([kinac(), str(tmp_path / "a.kir"),
                           str(tmp_path / "c.kir"), "--emit=shared", "-o",
                           str(lib)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert f"{tmp_path / 'c.kir'}:4:6: function @double is already defined " \
        f"at {tmp_path / 'a.kir'}:3:6" in proc.stderr, proc.stderr
    assert not lib.exists()
