"""Loading a kinac shared library and calling its TensorDesc entries.

`load(path)` opens a library from `kinac m.kir --emit=shared`, reads the
JSON manifest it embeds (docs/manifest.md) and declares, through cffi in ABI
mode, the entry `kinatd_<fn>` of every function (include/kina/abi.h): no
hand-written cdef per model. Calling `m.<fn>(*inputs, out=None)` follows
the seed ffi-bridge's host boundary: every buffer is the caller's (NumPy
arrays or PyTorch tensors), each crosses as one KinaTensorDesc (strides in
elements), outputs are allocated with the caller's framework or passed with
`out=`, and a non-zero return code raises `KinaError`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Sequence, Tuple, Union

import cffi
import numpy as np

__all__ = ["KinaError", "Module", "Function", "load", "CODES"]

# The return codes of kinatd_<fn> (include/kina/abi.h, KINA_TD_*).
CODES: Dict[int, str] = {
    0: "ok",
    -2: "unsupported dtype",
    -3: "launch error",
    -4: "device/stream setup error",
    -5: "null descriptor",
    -6: "shape mismatch",
    -7: "allocation failure",
    -8: "overlapping output",
    -9: "unsupported layout",
}

# The KinaTensorDesc dtype codes (KINA_TD_DTYPE_*), by manifest element type.
DTYPE_CODES: Dict[str, int] = {
    "f32": 0, "f16": 1, "bf16": 2, "i32": 3,
    "i64": 4, "f64": 5, "i8": 6, "i1": 7,
}

_NUMPY_DTYPES: Dict[str, Any] = {
    "f32": np.dtype(np.float32), "f16": np.dtype(np.float16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "f64": np.dtype(np.float64), "i8": np.dtype(np.int8),
    "i1": np.dtype(np.bool_),
}

_CDEF_COMMON = """
typedef struct {
  uint64_t ptr;
  int32_t ndim;
  int64_t shape[4];
  int64_t strides[4];
  int32_t dtype;
} KinaTensorDesc;
const char *kina_module_manifest(void);
const char *kina_last_error(void);
int64_t runtime_live_buffer_count(void);
"""

_MAX_RANK = 4


class KinaError(RuntimeError):
    """A failed call: `code` is the entry's return code (or the same code
    for a check made in Python before the call), `name` its meaning
    (CODES), `message` the runtime's or the checker's text."""

    def __init__(self, code: int, name: str, message: str) -> None:
        super().__init__(f"{message} [{name}, code {code}]")
        self.code = code
        self.name = name
        self.message = message


def _error(code: int, message: str) -> KinaError:
    return KinaError(code, CODES.get(code, "unknown code"), message)


def _torch() -> Any:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - depends on the machine
        return None
    return torch


def _is_torch(x: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _torch_dtypes() -> Dict[str, Any]:
    torch = _torch()
    return {
        "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
        "i32": torch.int32, "i64": torch.int64, "f64": torch.float64,
        "i8": torch.int8, "i1": torch.bool,
    }


def _type_str(t: Dict[str, Any]) -> str:
    dims = ", ".join(str(d) for d in t["dims"])
    return f"{t['element_type']}[{dims}]"


class Function:
    """One exported function of a loaded library: call it with the inputs
    in the manifest's order (NumPy arrays or PyTorch tensors, any strides);
    returns the output (or a tuple of them, one per result)."""

    def __init__(self, module: "Module", entry: Dict[str, Any]) -> None:
        self.module = module
        self.name: str = entry["name"]
        self.arguments: List[Dict[str, Any]] = entry["arguments"]
        self.results: List[Dict[str, Any]] = entry["results"]
        self.symbol: str = entry["symbols"].get(
            "tensor_desc", "kinatd_" + entry["symbols"]["entry"][len("kina_"):])
        self._fn = getattr(module._lib, self.symbol)

    def signature(self) -> str:
        """`name(x: f32[N, 4], ...) -> y: f32[N, 3]`."""
        args = ", ".join(f"{a['name']}: {_type_str(a)}" for a in self.arguments)
        res = ", ".join(f"{r['name']}: {_type_str(r)}" for r in self.results)
        if len(self.results) != 1:
            res = f"({res})"
        return f"{self.name}({args}) -> {res}"

    def __repr__(self) -> str:
        return f"<kina function {self.signature()}>"

    # -- checks -----------------------------------------------------------
    def _check(self, what: str, x: Any, spec: Dict[str, Any],
               symbols: Dict[str, Tuple[int, str]]) -> None:
        et = spec["element_type"]
        if _is_torch(x):
            want = _torch_dtypes()[et]
            if x.dtype != want:
                raise _error(-2, f"{self.name}: {what} has dtype "
                                 f"{x.dtype}, expected {et} ({want})")
        else:
            want = _NUMPY_DTYPES.get(et)
            if want is None or x.dtype != want:
                raise _error(-2, f"{self.name}: {what} has dtype {x.dtype}, "
                                 f"expected {et}")
        shape = tuple(x.shape)
        if len(shape) != spec["rank"]:
            raise _error(-6, f"{self.name}: {what} has shape {list(shape)}, "
                             f"expected {_type_str(spec)}")
        for d, (size, dim) in enumerate(zip(shape, spec["dims"])):
            if isinstance(dim, int):
                if size != dim:
                    raise _error(-6, f"{self.name}: {what} dim {d} has size "
                                     f"{size}, expected {dim}")
            elif dim != "?":
                if dim in symbols and symbols[dim][0] != size:
                    raise _error(-6, f"{self.name}: {what} dim {d} ({dim}) "
                                     f"has size {size}, but {dim} = "
                                     f"{symbols[dim][0]} from "
                                     f"{symbols[dim][1]}")
                symbols.setdefault(dim, (size, f"{what} dim {d}"))

    def _result_shape(self, spec: Dict[str, Any],
                      symbols: Dict[str, Tuple[int, str]]) -> List[int]:
        shape = []
        for d, dim in enumerate(spec["dims"]):
            if isinstance(dim, int):
                shape.append(dim)
            elif dim in symbols:
                shape.append(symbols[dim][0])
            else:
                raise _error(-6, f"{self.name}: result %{spec['name']} dim {d} "
                                 f"({dim}) is not known from the inputs; "
                                 "pass the output with out=")
        return shape

    def _cuda_device(self, inputs: List[Any]) -> Any:
        """The CUDA device of a cuda library's call: the inputs' (all on
        one device, else -4), or PyTorch's current device without inputs."""
        torch = _torch()
        if torch is None:
            raise _error(-4, f"{self.name}: a cuda library is called with "
                             "PyTorch CUDA tensors, and PyTorch is absent")
        devices = {x.device for x in inputs}
        if len(devices) > 1:
            raise _error(-4, f"{self.name}: the inputs are on "
                             f"{', '.join(sorted(map(str, devices)))}; one "
                             "call runs on one device")
        if devices:
            return devices.pop()
        return torch.device("cuda", torch.cuda.current_device())

    # -- descriptors ------------------------------------------------------
    def _fill(self, desc: Any, x: Any, et: str) -> None:
        if _is_torch(x):
            ptr = x.data_ptr()
            strides = list(x.stride())
        else:
            ptr = x.__array_interface__["data"][0]
            item = x.dtype.itemsize
            strides = [s // item for s in x.strides]
        desc.ptr = ptr
        desc.ndim = x.ndim
        for i, size in enumerate(x.shape):
            desc.shape[i] = int(size)
            desc.strides[i] = int(strides[i])
        desc.dtype = DTYPE_CODES[et]

    def _prepare_input(self, x: Any, spec: Dict[str, Any]) -> Any:
        cuda = self.module.target == "cuda"
        if _is_torch(x):
            if x.device.type != "cpu" and not cuda:
                raise _error(-4, f"{self.name}: %{spec['name']} is on "
                                 f"{x.device}, but the library was compiled "
                                 "for the cpu target")
            if cuda and x.device.type != "cuda":
                raise _error(-4, f"{self.name}: %{spec['name']} is on "
                                 f"{x.device}, but the library was compiled "
                                 "for the cuda target: pass CUDA tensors")
            # Forward only, as the seed's wrappers: inputs that require grad
            # are detached (the result does not require grad). Views cross
            # as they are, strides and all: the cpu entries copy what they
            # must on the host, the cuda entries gather on the GPU on the
            # caller's stream (kina/abi.h).
            return x.detach()
        if cuda:
            raise _error(-4, f"{self.name}: %{spec['name']} is a "
                             f"{type(x).__name__} in host memory, but the "
                             "library was compiled for the cuda target: pass "
                             "PyTorch CUDA tensors")
        if isinstance(x, np.ndarray):
            # A byte stride that is not a whole number of elements cannot
            # cross as a KinaTensorDesc: copy such (rare) views.
            if any(s % x.dtype.itemsize for s in x.strides):
                return np.ascontiguousarray(x)
            return x
        et = spec["element_type"]
        if et not in _NUMPY_DTYPES:
            raise _error(-2, f"{self.name}: %{spec['name']} must be a tensor "
                             f"of {et} (NumPy has no {et})")
        return np.asarray(x, dtype=_NUMPY_DTYPES[et])

    def __call__(self, *inputs: Any, out: Any = None) -> Any:
        if len(inputs) != len(self.arguments):
            raise TypeError(f"{self.name}() takes {len(self.arguments)} "
                            f"inputs ({', '.join(a['name'] for a in self.arguments)}), "
                            f"got {len(inputs)}")
        prepared = [self._prepare_input(x, spec)
                    for x, spec in zip(inputs, self.arguments)]
        symbols: Dict[str, Tuple[int, str]] = {}
        for x, spec in zip(prepared, self.arguments):
            self._check(f"%{spec['name']}", x, spec, symbols)
        use_torch = any(_is_torch(x) for x in prepared)
        cuda = self.module.target == "cuda"
        device = self._cuda_device(prepared) if cuda else None

        if out is None:
            outs = []
            for spec in self.results:
                shape = self._result_shape(spec, symbols)
                et = spec["element_type"]
                if use_torch or cuda:
                    outs.append(_torch().empty(shape,
                                               dtype=_torch_dtypes()[et],
                                               device=device))
                else:
                    if et not in _NUMPY_DTYPES:
                        raise _error(-2, f"{self.name}: result %{spec['name']}"
                                         f" is {et}, which NumPy lacks; pass "
                                         "PyTorch tensors")
                    outs.append(np.empty(shape, dtype=_NUMPY_DTYPES[et]))
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outs) != len(self.results):
                raise TypeError(f"{self.name}: out= needs {len(self.results)} "
                                f"outputs, got {len(outs)}")
            for o, spec in zip(outs, self.results):
                if _is_torch(o):
                    if o.requires_grad:
                        raise _error(-5, f"{self.name}: out= tensor "
                                         f"%{spec['name']} requires grad")
                elif isinstance(o, np.ndarray):
                    if not o.flags.writeable:
                        raise _error(-5, f"{self.name}: out= array "
                                         f"%{spec['name']} is read-only")
                    if any(s % o.dtype.itemsize for s in o.strides):
                        raise _error(-6, f"{self.name}: out= array "
                                         f"%{spec['name']} has strides that "
                                         "are not whole elements")
                else:
                    raise TypeError(f"{self.name}: out= takes NumPy arrays "
                                    f"or PyTorch tensors, got {type(o)}")
                self._check(f"output %{spec['name']}", o, spec, dict(symbols))
                if cuda and (not _is_torch(o) or o.device != device):
                    where = o.device if _is_torch(o) else "host memory"
                    raise _error(-4, f"{self.name}: out= %{spec['name']} is "
                                     f"on {where}, but the call runs on "
                                     f"{device}")

        # Outputs are written where they are, any strides (the entry
        # refuses a stride 0 on a dim of size > 1 with -8).
        for t in prepared + outs:
            if t.ndim > _MAX_RANK:
                raise _error(-6, f"{self.name}: rank {t.ndim} is above "
                                 f"{_MAX_RANK}, which a KinaTensorDesc "
                                 "cannot carry")
        ffi = self.module._ffi
        descs = ffi.new("KinaTensorDesc[]", max(len(outs) + len(prepared), 1))
        for i, (o, spec) in enumerate(zip(outs, self.results)):
            self._fill(descs[i], o, spec["element_type"])
        for i, (x, spec) in enumerate(zip(prepared, self.arguments)):
            self._fill(descs[len(outs) + i], x, spec["element_type"])
        ptrs = [descs + i for i in range(len(outs) + len(prepared))]
        # The host target ignores device and stream (device_id 0, stream 0);
        # a cuda library gets the tensors' device index and PyTorch's current
        # stream OF THAT DEVICE (the seed: device index, raw stream), not the
        # current device's: the entry runs there and restores the caller's
        # current context.
        device_id, stream = 0, 0
        if cuda:
            device_id = device.index
            stream = _torch().cuda.current_stream(device).cuda_stream
        # kina_last_error() is thread-local: read it on this thread.
        rc = self._fn(*ptrs, device_id, stream)
        message = (ffi.string(self.module._lib.kina_last_error())
                   .decode("utf-8", "replace") if rc else "")
        # The descriptors and the tensors they point into lived until here.
        del ptrs, descs, prepared
        if rc != 0:
            raise _error(int(rc), message)
        if out is not None:
            return out
        return outs[0] if len(outs) == 1 else tuple(outs)


class Module:
    """A loaded kinac shared library: `functions` maps each exported name
    to its Function, also reachable as an attribute (`m.forward`)."""

    def __init__(self, path: Union[str, os.PathLike]) -> None:
        # A name without '/' would make dlopen search the library path.
        self.path = os.path.abspath(os.fspath(path))
        self._ffi = cffi.FFI()
        self._ffi.cdef(_CDEF_COMMON)
        try:
            probe = self._ffi.dlopen(self.path, self._ffi.RTLD_NOW |
                                     self._ffi.RTLD_LOCAL)
        except OSError as e:
            raise OSError(f"kina.load: cannot open {self.path}: {e}") from e
        text = self._ffi.string(probe.kina_module_manifest()).decode("utf-8")
        self.manifest: Dict[str, Any] = json.loads(text)
        if (self.manifest.get("format") != "kina-manifest"
                or self.manifest.get("version") != 1):
            raise ValueError(f"kina.load: {self.path}: not a version-1 "
                             "kina manifest")
        self.name: str = self.manifest["module"]
        self.target: str = self.manifest.get("target", "cpu")
        # The entries' declarations, built from the manifest.
        decls = []
        for fn in self.manifest["functions"]:
            symbol = fn["symbols"].get(
                "tensor_desc", "kinatd_" + fn["symbols"]["entry"][len("kina_"):])
            n = len(fn["results"]) + len(fn["arguments"])
            params = ", ".join(["const KinaTensorDesc *"] * n +
                               ["int32_t", "uint64_t"])
            decls.append(f"int32_t {symbol}({params});")
        self._ffi.cdef("\n".join(decls))
        self._lib = self._ffi.dlopen(self.path, self._ffi.RTLD_NOW |
                                     self._ffi.RTLD_LOCAL)
        self.functions: Dict[str, Function] = {
            fn["name"]: Function(self, fn) for fn in self.manifest["functions"]}

    def __getattr__(self, name: str) -> Function:
        functions = self.__dict__.get("functions")
        if functions is None or name.startswith("__"):
            raise AttributeError(name)
        if name in functions:
            return functions[name]
        raise AttributeError(f"{self.path} has no function {name!r} "
                             f"(it has: {', '.join(functions)})")

    def __dir__(self) -> Sequence[str]:
        return list(super().__dir__()) + list(self.functions)

    def live_buffers(self) -> int:
        """The library runtime's count of live buffers (leak checks)."""
        return int(self._lib.runtime_live_buffer_count())

    def __repr__(self) -> str:
        return (f"<kina module {self.name!r} ({self.target}) from "
                f"{self.path}: {', '.join(self.functions)}>")


def load(path: Union[str, os.PathLike]) -> Module:
    """Opens a library from `kinac m.kir --emit=shared` (its own runtime,
    RTLD_LOCAL) and returns its Module."""
    return Module(path)

