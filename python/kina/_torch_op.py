"""`kina.torch_op(fn, name=...)`: a kina Function as a PyTorch custom op.

The op `torch.ops.<namespace>.<name>` is defined with a schema built from
the manifest (one `Tensor` per argument and result) and two kernels: CPU
(CUDA for a library compiled with --target=cuda), which calls the Function
(its TensorDesc entry), and Meta, which computes
only the outputs' shapes and dtypes from the manifest (symbolic dims solved
from the inputs), so shape propagation (meta tensors, fake tensors,
tracing) never runs the library. Uses `torch.library.Library`, present
since PyTorch 1.13 (Debian 12's python3-torch).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._module import Function, _torch, _torch_dtypes

_libraries: Dict[str, Any] = {}


def _library(namespace: str) -> Any:
    torch = _torch()
    if namespace not in _libraries:
        _libraries[namespace] = torch.library.Library(namespace, "DEF")
    return _libraries[namespace]


def torch_op(fn: Function, name: Optional[str] = None,
             namespace: str = "kina") -> Any:
    """Registers `fn` as `torch.ops.<namespace>.<name>` (default name:
    `<module>_<function>`) and returns that op. Raises ValueError when a
    result has a `?` dim (the Meta kernel could not know its size)."""
    torch = _torch()
    if torch is None:
        raise ImportError("kina.torch_op needs PyTorch")
    opname = name or f"{fn.module.name}_{fn.name}"
    for spec in fn.results:
        if "?" in spec["dims"]:
            raise ValueError(f"{fn.name}: result %{spec['name']} has a '?' "
                             "dim: no shape function for a custom op")
    args = ", ".join(f"Tensor {a['name']}" for a in fn.arguments)
    if len(fn.results) == 1:
        rets = "Tensor"
    else:
        rets = "(" + ", ".join("Tensor" for _ in fn.results) + ")"
    lib = _library(namespace)
    lib.define(f"{opname}({args}) -> {rets}")

    def cpu(*inputs: Any) -> Any:
        return fn(*inputs)

    def meta(*inputs: Any) -> Any:
        symbols: Dict[str, Any] = {}
        for x, spec in zip(inputs, fn.arguments):
            fn._check(f"%{spec['name']}", x, spec, symbols)
        outs = [torch.empty(fn._result_shape(spec, symbols),
                            dtype=_torch_dtypes()[spec["element_type"]],
                            device="meta") for spec in fn.results]
        return outs[0] if len(outs) == 1 else tuple(outs)

    lib.impl(opname, cpu, "CUDA" if fn.module.target == "cuda" else "CPU")
    lib.impl(opname, meta, "Meta")
    # PyTorch 1.13 has no autograd fallthrough for Meta: the op is forward
    # only (as a call of the Function), so autograd on meta tensors goes
    # straight to the Meta kernel.
    lib.impl(opname, meta, "AutogradMeta")
    return getattr(getattr(torch.ops, namespace), opname)


__all__ = ["torch_op"]
