"""The backend's behaviour around the op lowerings: fallbacks and their
log, graph breaks, recompiles, dynamic shapes, gradients, parameters passed
in place."""
import logging

import pytest
import torch
import torch.nn.functional as F

import fusec
import fusec.torch._backend as backend_module
from support import DEVICES, assert_close


def mlp(device="cpu"):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4),
        torch.nn.LayerNorm(4)).to(device)


def test_registered():
    assert "fusec" in torch._dynamo.list_backends()


@pytest.mark.parametrize("device", DEVICES)
def test_unsupported_op_falls_back_with_log(compiled, device):
    def fn(x):
        return torch.cumsum(x.sin(), 0).cos() * 2

    x = torch.randn(5, 3, device=device)
    result, run = compiled(fn, x)
    assert_close(result, fn(x))
    assert len(run.fallbacks) == 1
    assert "aten.cumsum.default x1 (no fusec lowering)" in run.fallbacks[0]
    assert "1 of 4 ops run in eager PyTorch" in run.fallbacks[0]
    assert run.compiled_ops == 3  # sin; cos and mul, around the cumsum


def test_fusec_logs_env(tmp_path):
    """FUSEC_LOGS=+fallback turns on DEBUG, one line per record."""
    import subprocess
    import sys

    script = ("import logging, fusec.torch\n"
              "print(logging.getLogger('fusec.torch').level)\n")
    env = dict(__import__("os").environ, FUSEC_LOGS="+fallback")
    out = subprocess.run([sys.executable, "-c", script], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(logging.DEBUG)


@pytest.mark.parametrize("device", DEVICES)
def test_graph_break(compiled, device):
    def fn(x):
        y = F.gelu(x * 2)
        torch._dynamo.graph_break()
        return torch.tanh(y) + 1

    x = torch.randn(4, 6, device=device)
    result, run = compiled(fn, x)
    assert_close(result, fn(x))
    assert run.fallbacks == []
    assert run.compiled_ops == 4  # mul, gelu | tanh, add: two graphs


def count_compiles(monkeypatch):
    calls = []
    real = fusec.compile

    def counting(graph, *args, **kwargs):
        calls.append(graph)
        return real(graph, *args, **kwargs)

    monkeypatch.setattr(fusec, "compile", counting)
    return calls


@pytest.mark.parametrize("dynamic", [None, False, True])
def test_new_shape_recompiles(monkeypatch, caplog, dynamic):
    """Each new shape is compiled again by fusec (static shapes), whether
    dynamo recompiles (dynamic=False), hands over symbolic sizes
    (dynamic=True), or does so from the second shape on (None)."""
    caplog.set_level(logging.INFO, logger="fusec.torch")
    calls = count_compiles(monkeypatch)
    torch._dynamo.reset()
    fn = torch.compile(lambda x: F.softmax(x * 3, -1), backend="fusec",
                       dynamic=dynamic)
    for rows in (2, 5, 7, 5):
        x = torch.randn(rows, 6)
        assert_close(fn(x), F.softmax(x * 3, -1))
    assert len(calls) == 3  # 2, 5 and 7 rows; the second 5 reuses
    if dynamic:
        assert any("dynamic shapes" in r.getMessage()
                   for r in caplog.records)


def test_parameters_not_copied(monkeypatch):
    """The compiled partitions receive the parameters' own storage."""
    seen = []
    real = fusec.compile

    def recording(graph, *args, **kwargs):
        model = real(graph, *args, **kwargs)

        def run(*tensors):
            seen.extend(t.data_ptr() for t in tensors)
            return model(*tensors)

        return run

    monkeypatch.setattr(fusec, "compile", recording)
    torch._dynamo.reset()
    module = mlp().eval()
    with torch.no_grad():
        torch.compile(module, backend="fusec")(torch.randn(3, 8))
    for name, parameter in module.named_parameters():
        assert parameter.data_ptr() in seen, name


@pytest.mark.parametrize("device", DEVICES)
def test_training_gradients(compiled, device):
    """Forward and backward graphs both go through fusec; the gradients
    match eager's."""
    module = mlp(device)
    reference = mlp(device)
    x = torch.randn(6, 8, device=device)

    def step(model):
        loss = model(x).pow(2).sum()
        loss.backward()
        return loss

    loss, run = compiled(lambda inp: step(module), x)
    expected = step(reference)
    assert_close(loss.detach(), expected.detach())
    assert run.compiled_ops > 0
    for (name, got), want in zip(module.named_parameters(),
                                 reference.parameters()):
        assert_close(got.grad, want.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_requires_grad_input(compiled, device):
    x = torch.randn(4, 5, device=device, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()

    def fn(x):
        return (F.silu(x) * x.softmax(-1)).sum()

    out, _ = compiled(fn, x)
    out.backward()
    fn(x_ref).backward()
    assert_close(x.grad, x_ref.grad)


def refuse_compile(monkeypatch):
    def refusing(graph, *args, **kwargs):
        raise fusec.Error("model.json: node 'n': error: no")

    monkeypatch.setattr(fusec, "compile", refusing)


def break_lowering(monkeypatch):
    def broken(*args):
        raise RuntimeError("broken rule")

    rule = backend_module.RULES[torch.ops.aten.sin.default]
    monkeypatch.setattr(rule, "lower", broken)


@pytest.mark.parametrize("fail, message", [
    (refuse_compile, "stays in eager PyTorch: fusec: model.json: node 'n'"),
    (break_lowering, "stays in eager PyTorch: lowering failed: RuntimeError"),
])
def test_failed_partition_stays_eager(monkeypatch, caplog, fail, message):
    """A partition fusec refuses, or whose lowering raises, runs in eager
    PyTorch, and the log says why."""
    fail(monkeypatch)
    caplog.set_level(logging.INFO, logger="fusec.torch")
    torch._dynamo.reset()
    x = torch.randn(3, 4)
    result = torch.compile(lambda x: x.sin() * 2, backend="fusec")(x)
    assert_close(result, x.sin() * 2)
    assert any(message in r.getMessage() for r in caplog.records)


def test_options_reach_fusec(monkeypatch):
    seen = []
    real = fusec.compile

    def recording(graph, target=None, **options):
        seen.append(options)
        return real(graph, target=target)

    monkeypatch.setattr(fusec, "compile", recording)
    torch._dynamo.reset()
    torch.compile(lambda x: x.exp() + 1, backend="fusec",
                  options={"fast_math": True})(torch.randn(3))
    assert seen == [{"fast_math": True}]


@pytest.mark.parametrize("device", DEVICES)
def test_precision_option(compiled, device):
    """options={"precision": "bf16"} runs the f32 module's tensors in bf16:
    outputs stay f32, within bf16's rounding of eager f32."""
    model = mlp(device)
    x = torch.randn(16, 8, device=device)
    with torch.no_grad():
        expected = model(x)
        got, run = compiled(model, x, options={"precision": "bf16"})
    assert got.dtype == torch.float32
    assert run.compiled_ops > 0 and not run.fallbacks
    error = ((got - expected).norm() / expected.norm()).item()
    assert 0 < error <= 2e-2, error


def test_decompositions_keep_fused_ops():
    table = backend_module.decompositions()
    assert torch.ops.aten.silu.default not in table
    assert torch.ops.aten.gelu.default not in table
    assert torch.ops.aten.native_layer_norm_backward.default in table


def flash_causal(q, k, v, bias):
    flash = torch.ops.aten._scaled_dot_product_flash_attention.default
    return flash(q, k, v, 0.0, True)[0]


def efficient_with_bias(q, k, v, bias):
    efficient = torch.ops.aten._scaled_dot_product_efficient_attention
    return efficient.default(q, k, v, bias, False)[0]


def cudnn_causal(q, k, v, bias):
    cudnn = torch.ops.aten._scaled_dot_product_cudnn_attention.default
    return cudnn(q, k, v, None, False, 0.0, True)[0]


@pytest.mark.parametrize("form, reference", [
    (flash_causal, lambda x, bias: F.scaled_dot_product_attention(
        x, x, x, is_causal=True)),
    (cudnn_causal, lambda x, bias: F.scaled_dot_product_attention(
        x, x, x, is_causal=True)),
    (efficient_with_bias, lambda x, bias: F.scaled_dot_product_attention(
        x, x, x, attn_mask=bias)),
])
def test_cuda_sdpa_without_a_gpu(form, reference):
    """SDPA's CUDA forms, traced on fake CUDA tensors (no GPU needed): they
    also return RNG state (uint64) that inference never reads, and only the
    results read decide support; the lowered graph, the same on any
    target, is checked on the CPU."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    mode = FakeTensorMode()
    fakes = [FakeTensor(mode, torch.empty(*shape, dtype=torch.bfloat16,
                                          device="meta"),
                        torch.device("cuda:0"))
             for shape in ((1, 2, 16, 64), (16, 16))]
    gm = make_fx(lambda x, bias: form(x, x, x, bias) * 2,
                 tracing_mode="fake")(*fakes)
    gm.graph.eliminate_dead_code()
    assert [backend_module.unsupported_reason(n) for n in gm.graph.nodes
            if n.op == "call_function"] == [None] * 3
    graph, results, single, _ = backend_module._lower_partition(gm, "sdpa")
    model = fusec.compile(graph, target="cpu")
    torch.manual_seed(0)
    x, bias = torch.randn(1, 2, 16, 64), torch.randn(16, 16)
    result = model(x.to(torch.bfloat16), bias.to(torch.bfloat16))[0]
    assert_close(result.float(), reference(x, bias) * 2, torch.bfloat16)
