"""A torch.compile graph calling a kina function registered as a custom op
(kina.torch_op): compiled with fullgraph=True (a graph break is an error),
exactly one graph, holding the op as one node between PyTorch ops, run by
Inductor (AOTAutograd's fake tensors go through the op's Meta kernel), the
numbers checked against PyTorch eager in float64 within the f32 class of
docs/tolerances.md, and a second call with new values reusing the graph.
On the CPU library (ops.kir, the python.ops_library fixture) and, where a
CUDA device and the cuda library are there, on CUDA tensors.

Needs PyTorch >= 2 (torch.compile); with Debian's python3-torch 1.13 the
tests skip, saying so (docs/python.md, "torch.compile"). Inductor's CPU
code needs a C++ compiler; without one the CPU graph goes through
AOTAutograd only (backend aot_eager), which still traces the op with fake
tensors.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_cuda  # noqa: E402 - the cuda library and the skip helper
from test_cuda import check_close, skip, torch  # noqa: E402

import kina  # noqa: E402


def need_compile():
    if torch is None:
        skip("PyTorch is not installed")
    major = int(torch.__version__.split(".")[0])
    if major < 2 or not hasattr(torch, "compile"):
        skip(f"torch.compile needs PyTorch >= 2; this is {torch.__version__} "
             "(Debian 12's python3-torch is 1.13; docs/python.md says how "
             "to run this test with PyTorch from PyPI)")


def compile_and_check(fn, name, device, inductor=True):
    op = kina.torch_op(fn, name=name)
    torch._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        if inductor:
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        from torch._dynamo.backends.common import aot_autograd
        return aot_autograd(fw_compiler=lambda g, _: g)(gm, example_inputs)

    def f(x, w, b):
        return torch.relu(op(x * 2.0, w, b)) - 1.0

    compiled = torch.compile(f, backend=backend, fullgraph=True)
    gen = torch.Generator().manual_seed(7)
    for step in range(2):
        x = torch.randn(16, 4, generator=gen).to(device)
        w = torch.randn(4, 3, generator=gen).to(device)
        b = torch.randn(3, generator=gen).to(device)
        y = compiled(x, w, b)
        assert y.device == x.device and tuple(y.shape) == (16, 3)
        ref = torch.relu((x.double() * 2) @ w.double() + b.double()) - 1
        check_close(y, ref, 1e-5)
    assert len(graphs) == 1, f"{len(graphs)} graphs (a recompilation)"
    targets = [n.target for n in graphs[0].graph.nodes
               if n.op == "call_function"]
    assert any(getattr(t, "overloadpacket", t) is op or t is op
               for t in targets), f"the op is not in the graph: {targets}"


def test_compile_cpu(ops):
    need_compile()
    inductor = bool(shutil.which(os.environ.get("CXX", "c++"))
                    or shutil.which("g++"))
    compile_and_check(ops.forward, "compiled_forward_cpu", "cpu", inductor)


def test_compile_cuda():
    need_compile()
    test_cuda.need_gpu()
    m = test_cuda.load()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        compile_and_check(m.forward, "compiled_forward_cuda", "cuda")
    stream.synchronize()


def main():
    """Without pytest (the GPU machine): the CUDA test only."""
    test_cuda._as_script = True
    try:
        test_compile_cuda()
        print("PASS test_compile_cuda")
    except test_cuda.Skip as e:
        print(f"SKIP test_compile_cuda: {e}")
    except Exception as e:  # noqa: BLE001 - report
        print(f"FAIL test_compile_cuda: {type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
