"""Each ATen lowering against eager PyTorch: the function compiled with
backend="fusec" must run in fusec (no fallback logged) and match eager
within the dtype's tolerance."""
import math

import pytest
import torch
import torch.nn.functional as F

from support import DEVICES, assert_close

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def randn(*shape):
    return lambda dtype, device: torch.randn(*shape, dtype=dtype,
                                             device=device)


def positive(*shape):
    return lambda dtype, device: torch.rand(
        *shape, dtype=dtype, device=device) + 0.25


# name -> (function, input makers); inputs take the dtype under test.
FLOAT_CASES = {
    "neg": (torch.neg, [randn(4, 5)]),
    "abs": (torch.abs, [randn(4, 5)]),
    "relu": (F.relu, [randn(4, 5)]),
    "exp": (torch.exp, [randn(4, 5)]),
    "log": (torch.log, [positive(4, 5)]),
    "sin_cos": (lambda x: torch.sin(x) + torch.cos(x), [randn(4, 5)]),
    "tanh": (torch.tanh, [randn(4, 5)]),
    "sigmoid": (torch.sigmoid, [randn(4, 5)]),
    "sqrt_rsqrt": (lambda x: torch.sqrt(x) * torch.rsqrt(x + 1),
                   [positive(4, 5)]),
    "reciprocal": (torch.reciprocal, [positive(4, 5)]),
    "erf": (torch.erf, [randn(4, 5)]),
    "floor_ceil": (lambda x: torch.floor(x * 4) + torch.ceil(x * 3),
                   [randn(4, 5)]),
    "round": (lambda x: torch.round(x * 4), [randn(4, 5)]),
    "silu": (F.silu, [randn(4, 5)]),
    "gelu": (F.gelu, [randn(4, 5)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [randn(4, 5)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [randn(4, 5)]),
    "hardtanh": (F.hardtanh, [randn(4, 5)]),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.7) + x.clamp(min=0.1)
              + x.clamp(max=-0.2), [randn(4, 5)]),
    "add_alpha": (lambda x, y: torch.add(x, y, alpha=2) - torch.sub(
        y, x, alpha=0.5), [randn(4, 5), randn(5)]),
    "mul_div": (lambda x, y: x * y / (y.abs() + 1) * 3 / 2,
                [randn(4, 5), randn(4, 1)]),
    "div_floor": (lambda x, y: torch.div(x, y, rounding_mode="floor"),
                  [randn(4, 5), positive(4, 5)]),
    "pow": (lambda x: x.pow(2) + x.abs().pow(1.5) + torch.pow(
        x.abs() + 1, x), [randn(4, 5)]),
    "max_min": (lambda x, y: torch.maximum(x, y) - torch.minimum(x, y),
                [randn(4, 5), randn(5)]),
    "fmod_remainder": (lambda x: torch.fmod(x * 5, 1.5)
                       + torch.remainder(x * 5, 1.5), [randn(4, 5)]),
    "compare": (lambda x, y: torch.stack([
        x == y, x != y, x < y, x <= y, x > 0.5, x >= -0.25]),
        [randn(4, 5), lambda d, dev: torch.randn(4, 5, device=dev).to(
            d).round()]),
    "where": (lambda x, y: torch.where(x > y, x, y * 2),
              [randn(4, 5), randn(4, 5)]),
    "masked_fill": (lambda x: x.masked_fill(x < 0, -1e4), [randn(4, 5)]),
    "sum_mean": (lambda x: x.sum(-1) + x.mean(0).sum() + x.sum(),
                 [randn(4, 5)]),
    "amax_amin": (lambda x: x.amax(-1, keepdim=True) - x.amin(0),
                  [randn(4, 5)]),
    "max_dim": (lambda x: x.max(-1), [randn(4, 5)]),
    "argmax": (lambda x: torch.stack([x.argmax(1), x.argmin(1)]),
               [randn(4, 5)]),
    "var": (lambda x: x.var(-1) + x.var(0, unbiased=False).sum(),
            [randn(4, 5)]),
    "softmax": (lambda x: F.softmax(x, -1) + F.log_softmax(x, 0),
                [randn(4, 5)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b, 1e-5)
                   + F.layer_norm(x, (4, 5)), [randn(3, 4, 5), randn(5),
                                               randn(5)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (5,), w, 1e-6),
                 [randn(3, 4, 5), randn(5)]),
    "rms_norm_written": (lambda x, w: x * torch.rsqrt(
        x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
        [randn(3, 4, 5), randn(5)]),
    "mm": (torch.mm, [randn(6, 8), randn(8, 5)]),
    "bmm": (torch.bmm, [randn(2, 6, 8), randn(2, 8, 5)]),
    "matmul_broadcast": (torch.matmul, [randn(2, 3, 6, 8), randn(8, 5)]),
    "linear": (F.linear, [randn(2, 3, 8), randn(5, 8), randn(5)]),
    "addmm_scaled": (
        lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2),
        [randn(5), randn(6, 8), randn(8, 5)]),
    "layout": (lambda x: x.view(3, 20).t().reshape(4, 3, 5)
               .permute(2, 0, 1).transpose(0, 1).unsqueeze(1)
               .expand(4, 2, 5, 3).flatten(2) * 2, [randn(3, 4, 5)]),
    "squeeze": (lambda x: x.squeeze(1).squeeze() + 1, [randn(3, 1, 5, 1)]),
    "slice_select": (lambda x: x[:, 1:4] * 2 + x[1, :, 2:5:2].sum()
                     + x[..., -1:].sum(), [randn(3, 5, 6)]),
    "cat_split": (lambda x, y: torch.cat(
        [*torch.split(x * 2, [2, 3], -1)[::-1], y], -1),
        [randn(3, 5), randn(3, 2)]),
    "chunk_rotate_half": (lambda x: torch.cat(
        [-x.chunk(2, -1)[1], x.chunk(2, -1)[0]], -1) * 2, [randn(2, 3, 8)]),
    "stack": (lambda x, y: torch.stack([x, y * 2], 1),
              [randn(3, 5), randn(3, 5)]),
    "to_dtype": (lambda x: x.to(torch.float32) * 2 + x.to(
        torch.int64).to(x.dtype) + (x > 0).to(x.dtype), [randn(4, 5)]),
    "constants": (lambda x: x + torch.arange(5, device=x.device)
                  + torch.ones_like(x) + torch.full((5,), 2.0,
                                                    device=x.device),
                  [randn(4, 5)]),
    "tril_mask": (lambda x: x.masked_fill(torch.ones(
        5, 5, device=x.device).tril() == 0, float("-inf")).softmax(-1),
        [randn(2, 5, 5)]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float_op(compiled, name, dtype, device):
    fn, makers = FLOAT_CASES[name]
    torch.manual_seed(0)
    args = [make(dtype, device) for make in makers]
    result, run = compiled(fn, *args)
    expected = fn(*args)
    assert run.fallbacks == []
    assert run.compiled_ops > 0
    for got, want in zip(*((r,) if isinstance(r, torch.Tensor) else r
                           for r in (result, expected))):
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype.is_floating_point:
            # A long chain rounds at each op in eager; the tolerance scales
            # with the values.
            assert_close(got.float(), want.float(), dtype)
        else:
            assert torch.equal(got, want)


def ints(*shape, low=-50, high=50, dtype=torch.int64):
    return lambda device: torch.randint(low, high, shape, dtype=dtype,
                                        device=device)


INTEGER_CASES = {
    "arith": (lambda a, b: (a + b * 3 - 7) * a, [ints(4, 5), ints(5)]),
    "true_div": (lambda a, b: a / b, [ints(4, 5), ints(4, 5, low=1)]),
    "trunc_div": (lambda a, b: torch.div(a, b, rounding_mode="trunc"),
                  [ints(4, 5), ints(4, 5, low=1)]),
    "remainder_fmod": (lambda a, b: torch.remainder(a, b) * 100
                       + torch.fmod(a, b), [ints(4, 5), ints(4, 5, low=1)]),
    "bitwise": (lambda a, b: (a & b) | (a ^ 3) | ~b, [ints(4, 5),
                                                      ints(4, 5)]),
    "logical": (lambda a, b: torch.logical_and(a > 0, b) | torch.logical_not(
        a) ^ torch.logical_or(a, b < 3), [ints(4, 5), ints(4, 5)]),
    "int32_sum": (lambda a: a.sum(-1) + a.amax(0).sum(),
                  [ints(4, 5, dtype=torch.int32)]),
    "embedding": (lambda ids, w: F.embedding(ids, w.float()),
                  [ints(2, 3, low=0, high=7), ints(7, 4)]),
    "index_select": (lambda x, i: x.index_select(1, i) * 2 + x[i].sum(),
                     [ints(6, 6), ints(3, low=0, high=6)]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(INTEGER_CASES))
def test_integer_op(compiled, name, device):
    fn, makers = INTEGER_CASES[name]
    torch.manual_seed(0)
    args = [make(device) for make in makers]
    result, run = compiled(fn, *args)
    expected = fn(*args)
    assert run.fallbacks == []
    assert run.compiled_ops > 0
    assert result.dtype == expected.dtype
    if expected.dtype.is_floating_point:
        assert_close(result, expected)
    else:
        assert torch.equal(result, expected)


def sdpa_inputs(dtype, device, heads=4, kv_heads=4, q_len=16, k_len=16):
    torch.manual_seed(0)
    q = torch.randn(2, heads, q_len, 32, dtype=dtype, device=device)
    k = torch.randn(2, kv_heads, k_len, 32, dtype=dtype, device=device)
    v = torch.randn(2, kv_heads, k_len, 32, dtype=dtype, device=device)
    return q, k, v


SDPA_CASES = {
    "plain": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    "causal": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True),
    "scale": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, scale=0.3),
    "bool_mask": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.ones(16, 16, dtype=torch.bool,
                                      device=q.device).tril(-2)),
    "float_mask": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.linspace(-1, 1, 256, device=q.device,
                                          dtype=q.dtype).view(16, 16)),
    "written_out": lambda q, k, v: torch.softmax(
        q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(SDPA_CASES))
def test_attention(compiled, name, dtype, device):
    q, k, v = sdpa_inputs(dtype, device)
    fn = SDPA_CASES[name]
    with torch.no_grad():
        result, run = compiled(fn, q, k, v)
        expected = fn(q, k, v)
    assert run.fallbacks == []
    assert_close(result.float(), expected.float(), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_attention_fully_masked_row(compiled, device):
    """A query row whose keys are all masked: eager's SDPA gives 0 there
    (its safe softmax), and so must the compiled one."""
    q, k, v = sdpa_inputs(torch.float32, device)
    mask = torch.ones(16, 16, dtype=torch.bool, device=device)
    mask[3] = False

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    with torch.no_grad():
        result, run = compiled(fn, q, k, v)
        expected = fn(q, k, v)
    assert run.fallbacks == []
    assert_close(result, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_large_integer_scalar(compiled, device):
    """An int64 scalar beyond a double's 53 bits stays exact."""
    x = torch.arange(6, device=device)

    def fn(x):
        return x.masked_fill(x > 2, -2**62 - 1) + (2**60 + 3)

    result, run = compiled(fn, x)
    assert run.fallbacks == []
    assert torch.equal(result, fn(x))


@pytest.mark.parametrize("device", DEVICES)
def test_broadcast_batch_matmul(compiled, device):
    """A 4-D matmul whose batch dims broadcast (one key head for four
    query heads) decomposes to a bmm of expanded operands."""
    torch.manual_seed(0)
    q = torch.randn(2, 4, 8, 16, device=device)
    k = torch.randn(2, 1, 8, 16, device=device)

    def fn(q, k):
        return torch.softmax(q @ k.transpose(-2, -1), -1) @ k

    result, run = compiled(fn, q, k)
    assert run.fallbacks == []
    assert_close(result, fn(q, k))
