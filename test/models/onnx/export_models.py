"""Exports small transformer models from PyTorch to ONNX, with reference
inputs and outputs, for end-to-end tests of fusec.

Run by hand from this folder (needs the PyPI packages torch and onnx; the
outputs are committed):

    cd test/models/onnx && python3 export_models.py [NAME ...] [--out DIR]

(no NAME: every model). The modules and their inputs are also listed in
MODELS for bench/torch_model_peers.py, which rebuilds them.

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

and, at issue 8's reference sizes (the same classes, larger; the two
layers of each share one set of weights, which keeps the files at 3.8,
3.8 and 0.9 MB without changing the compute):

    gpt2_d256  ids int64[1,64] -> the gpt2 LM with d 256, 4 heads,
               2 blocks, vocabulary 256 -> logits [1,64,256]
    llama_d256 ids int64[1,64] -> token embedding -> 2 Llama blocks
               (d 256, 4 heads, MLP 688) -> RMSNorm -> logits [1,64,256]
    bert_d128  x[2,32,128] -> 2 BERT encoder layers (d 128, 2 heads,
               as BERT-tiny)

The first four share one random stream (torch.manual_seed(0), in that
order); each larger model seeds its own, so any subset exports the same
files.

It also prints each graph's op types with counts and the largest absolute
difference between onnx.reference.ReferenceEvaluator and PyTorch.
"""
import argparse
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
    def __init__(self, d=D):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x)))) + x


def make_layers(make, layers, shared):
    """`layers` modules from `make`; with `shared`, one module repeated (its
    weights stored once: the same compute in half the file)."""
    if shared:
        return nn.ModuleList([make()] * layers)
    return nn.ModuleList([make() for _ in range(layers)])


def split_heads(t, b, s, d=D, heads=HEADS):
    return t.view(b, s, heads, d // heads).transpose(1, 2)


class CausalSelfAttention(nn.Module):
    def __init__(self, d=D, heads=HEADS, seq=SEQ):
        super().__init__()
        self.d, self.heads = d, heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(
            1, 1, seq, seq))

    def forward(self, x):
        b, s, _ = x.shape
        d, heads = self.d, self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (split_heads(t, b, s, d, heads) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(d // heads)
        att = att.masked_fill(self.mask[:, :, :s, :s] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, s, d))


class Gpt2Block(nn.Module):
    def __init__(self, d=D, heads=HEADS, seq=SEQ):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, seq)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, d=D, heads=HEADS, vocab=VOCAB, seq=SEQ, layers=2,
                 shared=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = make_layers(lambda: Gpt2Block(d, heads, seq), layers,
                                  shared)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class BertLayer(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.d, self.heads = d, heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        b, s, _ = x.shape
        d, heads = self.d, self.heads
        q, k, v = (split_heads(f(x), b, s, d, heads)
                   for f in (self.q, self.k, self.v))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // heads), -1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class BertEncoder(nn.Module):
    """`layers` BertLayers on the hidden states (no embeddings, no mask)."""

    def __init__(self, d=D, heads=HEADS, layers=2, shared=False):
        super().__init__()
        self.layers = make_layers(lambda: BertLayer(d, heads), layers, shared)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class RMSNorm(nn.Module):
    def __init__(self, eps=1e-6, d=D):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d=D, heads=HEADS, seq=SEQ, ffn=172):
        super().__init__()
        self.d, self.heads = d, heads
        hd = d // heads
        self.norm1 = RMSNorm(d=d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.norm2 = RMSNorm(d=d)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)
        inv_freq = 1.0 / 10000 ** (torch.arange(0, hd, 2).float() / hd)
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("causal", torch.full((seq, seq), float(
            "-inf")).triu(1))

    def forward(self, x):
        b, s, _ = x.shape
        d, heads = self.d, self.heads
        h = self.norm1(x)
        q, k, v = (split_heads(f(h), b, s, d, heads)
                   for f in (self.wq, self.wk, self.wv))
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = q @ k.transpose(-2, -1) / math.sqrt(d // heads)
        att = F.softmax(att + self.causal[:s, :s], dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.wo(y)
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    """A Llama-style LM: token embedding (positions come from the blocks'
    rotary embeddings), `layers` LlamaBlocks, RMSNorm, an untied head."""

    def __init__(self, d=D, heads=HEADS, vocab=VOCAB, seq=SEQ, layers=2,
                 ffn=172, shared=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = make_layers(lambda: LlamaBlock(d, heads, seq, ffn),
                                  layers, shared)
        self.norm = RMSNorm(d=d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


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


def export(name, model, inputs, input_names, write=True):
    """Exports `model` as `name`.onnx with its inputs and PyTorch's output;
    with write=False only draws what exporting would (the norms' random
    perturbation), so that later models get the same weights."""
    randomize_norms(model)
    if not write:
        return
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
    size = sum(os.path.getsize(f) for f in
               [path, f"{name}_output_0.pb"] +
               [f"{name}_input_{i}.pb" for i in range(len(arrays))])
    print(f"  {size / 1e6:.2f} MB with its inputs and output")


# Every model: name -> (seed or None, module factory, input factory, input
# names). A seed of None continues the random stream of the models before it
# (the first four, as they were first exported); bench/torch_model_peers.py
# builds the same modules and inputs from here.
MODELS = {
    "mlp_block": (0, lambda: MlpBlock(), lambda: [torch.randn(16, D)],
                  ["x"]),
    "gpt2": (None, lambda: Gpt2(),
             lambda: [torch.randint(0, VOCAB, (1, SEQ))], ["ids"]),
    "bert": (None, lambda: BertLayer(), lambda: [torch.randn(2, 32, D)],
             ["x"]),
    "llama": (None, lambda: LlamaBlock(), lambda: [torch.randn(1, SEQ, D)],
              ["x"]),
    # Issue 8's reference sizes.
    # Issue 8's reference sizes. Their layers share weights: the same
    # compute, half the bytes (distinct weights would take about 16 MB for
    # the three: too much to commit, and staged for the GPU machine the
    # models travel twice, in the checkout and in stage/).
    "gpt2_d256": (1, lambda: Gpt2(d=256, heads=4, vocab=256, seq=64,
                                  shared=True),
                  lambda: [torch.randint(0, 256, (1, 64))], ["ids"]),
    "llama_d256": (2, lambda: Llama(d=256, heads=4, vocab=256, seq=64,
                                    ffn=688, shared=True),
                   lambda: [torch.randint(0, 256, (1, 64))], ["ids"]),
    "bert_d128": (3, lambda: BertEncoder(d=128, heads=2, layers=2,
                                         shared=True),
                  lambda: [torch.randn(2, 32, 128)], ["x"]),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to write (default: all): "
                             f"{' '.join(MODELS)}")
    parser.add_argument("--out", default=os.path.dirname(
        os.path.abspath(__file__)), help="output folder (default: here)")
    args = parser.parse_args()
    unknown = set(args.names) - set(MODELS)
    if unknown:
        parser.error(f"unknown model(s): {' '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    os.chdir(args.out)
    for name, (seed, make_module, make_inputs, input_names) in \
            MODELS.items():
        if seed is not None:
            torch.manual_seed(seed)
        module = make_module()
        export(name, module, make_inputs(), input_names,
               write=not args.names or name in args.names)


if __name__ == "__main__":
    main()
