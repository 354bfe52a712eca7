"""Exports small transformer models from PyTorch to ONNX, with reference
inputs and outputs, for end-to-end tests of fusec.

Run by hand from this folder (needs the PyPI packages torch and onnx; the
outputs are committed):

    cd test/models/onnx && python3 export_models.py

Every model has random weights (torch.manual_seed(0); norm scales and shifts
perturbed from 1 and 0), static shapes, and is
exported by the TorchScript exporter (dynamo=False) at opset 17, with constant
folding, then saved at IR version 8 (readable by Debian's libonnx 1.12).
For each model <name> it writes:

    <name>.onnx            the model
    <name>_input_<i>.pb    its inputs, ONNX TensorProto
    <name>_output_0.pb     PyTorch's output for them, ONNX TensorProto

The models:

    mlp_block  x[16,64] -> LayerNorm -> Linear(64,256) -> GELU (erf)
               -> Linear(256,64) -> + x
    gpt2       ids int64[1,16] -> token + learned position embeddings
               -> 2 GPT-2 blocks (pre-LayerNorm, causal 4-head attention
               with a fused qkv Linear and a lower-triangular mask buffer,
               GELU-tanh MLP) -> LayerNorm -> logits [1,16,128]
    bert       x[2,32,64] -> one post-LayerNorm BERT encoder layer
               (4-head attention, no mask; GELU FFN)
    llama      x[1,16,64] -> one Llama block (RMSNorm, rotary embeddings
               with rotate-half, causal mask, SiLU-gated MLP)

It also prints each graph's op types with counts and the largest absolute
difference between onnx.reference.ReferenceEvaluator and PyTorch.
"""
import collections
import math
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

D, HEADS, VOCAB, SEQ = 64, 4, 128, 16


class MlpBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x)))) + x


def split_heads(t, b, s):
    return t.view(b, s, HEADS, D // HEADS).transpose(1, 2)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ)).view(
            1, 1, SEQ, SEQ))

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split(D, dim=2)
        q, k, v = (split_heads(t, b, s) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(D // HEADS)
        att = att.masked_fill(self.mask[:, :, :s, :s] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, s, D))


class Gpt2Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.out = nn.Linear(4 * D, D)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.blocks = nn.ModuleList([Gpt2Block() for _ in range(2)])
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.o = nn.Linear(D, D)
        self.ln1 = nn.LayerNorm(D, eps=1e-12)
        self.fc = nn.Linear(D, 4 * D)
        self.out = nn.Linear(4 * D, D)
        self.ln2 = nn.LayerNorm(D, eps=1e-12)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (split_heads(f(x), b, s) for f in (self.q, self.k, self.v))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // HEADS), -1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class RMSNorm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        hd = D // HEADS
        self.norm1 = RMSNorm()
        self.wq = nn.Linear(D, D, bias=False)
        self.wk = nn.Linear(D, D, bias=False)
        self.wv = nn.Linear(D, D, bias=False)
        self.wo = nn.Linear(D, D, bias=False)
        self.norm2 = RMSNorm()
        self.w1 = nn.Linear(D, 172, bias=False)
        self.w2 = nn.Linear(172, D, bias=False)
        self.w3 = nn.Linear(D, 172, bias=False)
        inv_freq = 1.0 / 10000 ** (torch.arange(0, hd, 2).float() / hd)
        freqs = torch.outer(torch.arange(SEQ).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("causal", torch.full((SEQ, SEQ), float(
            "-inf")).triu(1))

    def forward(self, x):
        b, s, _ = x.shape
        h = self.norm1(x)
        q, k, v = (split_heads(f(h), b, s) for f in (self.wq, self.wk, self.wv))
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = q @ k.transpose(-2, -1) / math.sqrt(D // HEADS)
        att = F.softmax(att + self.causal[:s, :s], dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.wo(y)
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def write_pb(array, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array))
                .SerializeToString())


def randomize_norms(model):
    """LayerNorm starts at weight 1, bias 0: perturb both so that a wrong
    scale or shift shows in the output."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.1 * torch.randn_like(m.weight))
                m.bias.copy_(0.1 * torch.randn_like(m.bias))


def export(name, model, inputs, input_names):
    randomize_norms(model)
    model.eval()
    with torch.no_grad():
        output = model(*inputs)
    path = f"{name}.onnx"
    torch.onnx.export(model, tuple(inputs), path, opset_version=17,
                      do_constant_folding=True, dynamo=False,
                      input_names=input_names, output_names=["y"])
    proto = onnx.load(path)
    if proto.ir_version > 8:
        proto.ir_version = 8  # readable by Debian's libonnx 1.12
    onnx.checker.check_model(proto)
    onnx.save(proto, path)
    arrays = [t.numpy() for t in inputs]
    for i, array in enumerate(arrays):
        write_pb(array, f"{name}_input_{i}.pb")
    expected = output.numpy()
    write_pb(expected, f"{name}_output_0.pb")

    census = collections.Counter(n.op_type for n in proto.graph.node)
    print(f"{name}: {len(proto.graph.node)} nodes, ir_version "
          f"{proto.ir_version}")
    print("  ops: " + ", ".join(f"{op} {n}" for op, n in
                                sorted(census.items())))
    (got,) = ReferenceEvaluator(proto).run(None, dict(zip(input_names,
                                                          arrays)))
    print(f"  ReferenceEvaluator vs torch: max abs diff "
          f"{np.abs(got - expected).max():.3g} (|y| max "
          f"{np.abs(expected).max():.3g})")


def main():
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    torch.manual_seed(0)
    export("mlp_block", MlpBlock(), [torch.randn(16, D)], ["x"])
    export("gpt2", Gpt2(), [torch.randint(0, VOCAB, (1, SEQ))], ["ids"])
    export("bert", BertLayer(), [torch.randn(2, 32, D)], ["x"])
    export("llama", LlamaBlock(), [torch.randn(1, SEQ, D)], ["x"])


if __name__ == "__main__":
    main()
