"""pytest fixtures of the kina package tests: the library compiled from
ops.kir by the ctest fixture python.ops_library ($KINA_TEST_LIBRARY), or
by $KINAC here when run alone."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


@pytest.fixture(scope="session")
def ops_path(tmp_path_factory):
    path = os.environ.get("KINA_TEST_LIBRARY")
    if path and os.path.exists(path):
        return path
    kinac = os.environ.get("KINAC")
    if not kinac:
        pytest.fail("set KINA_TEST_LIBRARY or KINAC (ctest sets both)")
    out = str(tmp_path_factory.mktemp("ops") / "ops.so")
    subprocess.run([kinac, os.path.join(HERE, "ops.kir"), "--emit=shared",
                    "-o", out], check=True)
    return out


@pytest.fixture(scope="session")
def ops(ops_path):
    import kina
    return kina.load(ops_path)
