# lit configuration of kinac's FileCheck golden tests: every .kir file here
# is a test whose RUN lines compile it with `%kinac` (the built kinac) and
# check the MLIR (or the diagnostics) with FileCheck. FileCheck and `not`
# come from LLVM 22's tool directory (lit.site.cfg.py sets the paths).
import os

import lit.formats

config.name = "kinac-filecheck"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kir", ".ll"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%kinac", config.kinac))
# The cuda target's tests need the CUDA Toolkit's ptxas (kinac looks in
# $CUDA_PATH, then /usr/local/cuda).
_cuda = os.environ.get("CUDA_PATH") or "/usr/local/cuda"
if os.access(os.path.join(_cuda, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "")])
