"""kina: call functions compiled by kinac from Python.

    import kina
    m = kina.load("model.so")        # kinac model.kir --emit=shared -o model.so
    y = m.forward(x, w1, b1)         # NumPy arrays or PyTorch tensors
    m.forward(x, w1, b1, out=y)      # into preallocated outputs

Each call goes through the library's TensorDesc entry `kinatd_<fn>`
(include/kina/abi.h); failures raise `kina.KinaError(code, name, message)`.
See docs/python.md.
"""

from ._module import CODES, DTYPE_CODES, Function, KinaError, Module, load
from ._torch_op import torch_op

__all__ = ["CODES", "DTYPE_CODES", "Function", "KinaError", "Module", "load",
           "torch_op"]
__version__ = "0.1.0"
