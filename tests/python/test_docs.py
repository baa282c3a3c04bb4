"""The examples of docs/python.md: its first ```kir block compiled to
model.so with $KINAC, then every ```python block run in order in one
namespace in model.so's folder (a block whose first line says `requires
torch` is skipped, saying so, where PyTorch is absent)."""

import importlib.util
import os
import re
import subprocess

import pytest

DOCS = os.environ.get("KINA_DOCS", os.path.join(os.path.dirname(__file__),
                                                 "..", "..", "docs"))


def blocks(text, lang):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", text, re.S | re.M)


def test_python_md(tmp_path, monkeypatch):
    kinac = os.environ.get("KINAC")
    if not kinac:
        pytest.fail("set KINAC (ctest does)")
    text = open(os.path.join(DOCS, "python.md")).read()
    kir = blocks(text, "kir")
    python = blocks(text, "python")
    assert kir and len(python) >= 3
    (tmp_path / "model.kir").write_text(kir[0])
    subprocess.run([kinac, str(tmp_path / "model.kir"), "--emit=shared",
                    "-o", str(tmp_path / "model.so")], check=True)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    has_torch = importlib.util.find_spec("torch") is not None
    skipped = 0
    for code in python:
        if "requires torch" in code.splitlines()[0] and not has_torch:
            skipped += 1
            continue
        exec(compile(code, "docs/python.md", "exec"), namespace)
    if skipped:
        pytest.skip(f"{skipped} PyTorch block(s) skipped: no torch")
