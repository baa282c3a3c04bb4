# lit configuration of the pass tests: every .mlir file here is a test whose
# RUN lines run `%kina-opt` (the built kina-opt) with one kinac pass or
# pipeline on a small input and check the output with FileCheck, or the
# errors with -verify-diagnostics. FileCheck and `not` come from LLVM 22's
# tool directory (lit.site.cfg.py sets the paths). The tests of the whole
# cuda pipeline need the CUDA Toolkit's ptxas (REQUIRES: ptxas; the
# pipeline looks in $CUDA_PATH, then /usr/local/cuda).
import os

import lit.formats

config.name = "kinac-passes"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%kina-opt", config.kina_opt))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "")])

_cuda = os.environ.get("CUDA_PATH") or "/usr/local/cuda"
if os.access(os.path.join(_cuda, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
