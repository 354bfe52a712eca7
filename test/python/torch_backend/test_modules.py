"""Whole modules through backend="fusec" against eager: the MLP, GPT-2,
BERT and Llama modules of test/models/onnx/export_models.py, and GPT-2 and
BERT with F.scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F

from support import DEVICES

pytest.importorskip("onnx")  # export_models imports it
import export_models as m  # noqa: E402


class SdpaCausalSelfAttention(m.CausalSelfAttention):
    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split(self.d, dim=2)
        q, k, v = (m.split_heads(t, b, s, self.d, self.heads)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, s, self.d))


class SdpaBertLayer(m.BertLayer):
    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (m.split_heads(f(x), b, s, self.d, self.heads)
                   for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v)
        x = self.ln1(x + self.o(y.transpose(1, 2).reshape(b, s, self.d)))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


def with_sdpa(model):
    for module in model.modules():
        if type(module) is m.CausalSelfAttention:
            module.__class__ = SdpaCausalSelfAttention
        elif type(module) is m.BertLayer:
            module.__class__ = SdpaBertLayer
    return model


MODELS = {
    "mlp": (m.MlpBlock, lambda: torch.randn(16, 64)),
    "gpt2": (m.Gpt2, lambda: torch.randint(0, 128, (1, 16))),
    "gpt2_sdpa": (lambda: with_sdpa(m.Gpt2()),
                  lambda: torch.randint(0, 128, (1, 16))),
    "bert": (m.BertEncoder, lambda: torch.randn(2, 32, 64)),
    "bert_sdpa": (lambda: with_sdpa(m.BertEncoder()),
                  lambda: torch.randn(2, 32, 64)),
    "llama": (m.Llama, lambda: torch.randint(0, 128, (1, 16))),
}


def build(name, dtype, device):
    make_module, make_input = MODELS[name]
    torch.manual_seed(0)
    module = make_module()
    m.randomize_norms(module)
    x = make_input()
    module = module.to(device=device, dtype=dtype).eval()
    if x.dtype.is_floating_point:
        x = x.to(dtype)
    return module, x.to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_module(compiled, name, dtype, device):
    module, x = build(name, dtype, device)
    with torch.no_grad():
        result, run = compiled(module, x)
        expected = module(x)
    assert run.fallbacks == []
    assert run.compiled_ops > 5
    # A model chains dozens of roundings: bf16 against bf16 eager is
    # compared at the scale of the outputs.
    scale = expected.float().abs().max().item()
    tol = 2e-4 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(result.float(), expected.float(),
                               atol=tol * scale, rtol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["gpt2", "gpt2_sdpa", "bert", "bert_sdpa",
                                  "llama"])
def test_attention_fused(monkeypatch, name, device):
    """Each block's attention, written out or SDPA, becomes one fusec
    attention kernel (its head split and merge read in place)."""
    import fusec

    models = []
    real = fusec.compile

    def recording(graph, *args, **kwargs):
        models.append(real(graph, *args, **kwargs))
        return models[-1]

    monkeypatch.setattr(fusec, "compile", recording)
    module, x = build(name, torch.float32, device)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(module, backend="fusec")(x)
    kernels = [k for model in models for k in model.kernels]
    assert sum("attention" in k.ops for k in kernels) == 2  # two blocks
