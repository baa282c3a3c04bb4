"""The kina package on PyTorch CPU tensors: every dtype the seed names (f32,
f16, bf16, i32) and the extensions (i64, f64, i8, bool), contiguous,
transposed, sliced, negative-free stepped and broadcast (expand, stride 0)
inputs, symbolic dims, out=, outputs allocated as torch tensors, inputs
that require grad detached, an out= tensor that requires grad refused, a
shape mismatch raising KinaError."""

import pytest

import kina

torch = pytest.importorskip("torch", reason="python3-torch not installed")

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "i32": torch.int32, "i64": torch.int64, "f64": torch.float64,
          "i8": torch.int8}


def sample(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


@pytest.mark.parametrize("et", sorted(DTYPES))
def test_every_dtype_with_views(ops, et):
    dt = DTYPES[et]
    base = sample(dt, (6, 8), seed=1)
    views = {
        "contiguous": base[:3, :4].clone(),
        "transposed": base[:4, :3].t(),
        "sliced": base[1:4, 2:6],
        "stepped": base[::2, ::2][:3, :4],
        "broadcast": base[0, :4].expand(3, 4),
    }
    fn = getattr(ops, f"add_{et}")
    for name_a, a in views.items():
        for name_b, b in views.items():
            got = fn(a, b)
            assert isinstance(got, torch.Tensor) and got.dtype == dt
            assert torch.equal(got, a + b), f"{et} {name_a}+{name_b}"


def test_bool(ops):
    a = torch.randint(0, 2, (4, 6)).bool()
    assert torch.equal(ops.not_i1(a[:, ::2]), ~a[:, ::2])


def test_forward_grad_and_out(ops):
    x = sample(torch.float32, (5, 4)).requires_grad_()
    w = sample(torch.float32, (4, 3), seed=2)
    b = sample(torch.float32, (3,), seed=3)
    y = ops.forward(x, w, b)
    assert not y.requires_grad
    torch.testing.assert_close(y, x.detach() @ w + b)
    big = torch.full((5, 6), -1.0)
    out = big[:, 1::2]
    assert ops.forward(x, w, b, out=out) is out
    torch.testing.assert_close(big[:, 1::2], x.detach() @ w + b)
    assert bool((big[:, ::2] == -1).all())
    with pytest.raises(kina.KinaError) as e:
        ops.forward(x, w, b, out=torch.empty(5, 3, requires_grad=True))
    assert e.value.code == -5 and "requires grad" in e.value.message


def test_mismatch(ops):
    a = torch.ones(3)
    with pytest.raises(kina.KinaError) as e:
        ops.sum_diff(a, torch.ones(4))
    assert e.value.code == -6 and e.value.name == "shape mismatch"
    with pytest.raises(kina.KinaError) as e:
        ops.sum_diff(a, torch.ones(3, dtype=torch.float64))
    assert e.value.code == -2
    s, d = ops.sum_diff(a, torch.arange(3.0))
    assert torch.equal(s, a + torch.arange(3.0))
    assert torch.equal(d, a - torch.arange(3.0))


def test_torch_op(ops):
    op = kina.torch_op(ops.forward, name="ops_forward_test")
    assert op is torch.ops.kina.ops_forward_test
    x = sample(torch.float32, (5, 4))
    w = sample(torch.float32, (4, 3), seed=2)
    b = sample(torch.float32, (3,), seed=3)
    torch.testing.assert_close(op(x, w, b), x @ w + b)
    # The Meta kernel: shapes and dtypes from the manifest, no call.
    y = op(x.to("meta"), w.to("meta"), b.to("meta"))
    assert y.device.type == "meta" and tuple(y.shape) == (5, 3)
    two = kina.torch_op(ops.sum_diff, name="ops_sum_diff_test")
    s, d = two(torch.ones(7, device="meta"), torch.ones(7, device="meta"))
    assert tuple(s.shape) == (7,) and tuple(d.shape) == (7,)
    with pytest.raises(kina.KinaError):
        op(x.to("meta"), w[:3].to("meta"), b.to("meta"))
    with pytest.raises(ValueError):
        kina.torch_op(ops.scale)
