"""A GPT-2-style decoder with a static KV cache, as PyTorch module and as an
ONNX decoder step that fusec compiles once per sequence length and runs
token by token (examples/generate/generate.cpp).

    python3 export_decoder.py OUT_DIR [--config tiny|small] [--max-cache N]
                              [--prompt N] [--check-steps K]
                              [--exporter graph|torchscript]

writes

    OUT_DIR/decoder.onnx    one decoder step (opset 24)
    OUT_DIR/prompt.npy      int64 [1, prompt]: the prompt's token ids
    OUT_DIR/tokens.npy      int64 [check-steps]: PyTorch's greedy tokens
    OUT_DIR/logits.npy      f32 [1 + check-steps, vocab]: PyTorch's logits of
                            the last position after the prompt and after each
                            of the first greedy tokens

The step's inputs are `ids` int64 [1, seq] (seq: the dim_param fixed per
compile: the prompt's length, then 1), `past_len` int64 [1] (positions
already in the cache) and per layer `past_key_L`, `past_value_L`
f32 [1, heads, max_cache, head_dim]. Its outputs are `next_id` int64 [1, 1]
(greedy: ArgMax of the last position's logits), `next_len` int64 [1]
(past_len + seq), `logits` f32 [1, vocab] and `present_key_L`,
`present_value_L`, the caches with this step's keys and values written at
past_len (ONNX TensorScatter): the cache keeps its shape, so a step's
present may share its past's buffer. Attention (ONNX Attention) reads the
whole cache under a boolean mask that admits key j for query i when
j <= past_len + i: what transformers' static cache does. With
`--exporter torchscript` the same step comes from torch.onnx.export (opset
18: ScatterElements for the cache update, attention as MatMul/Softmax, the
exporter's shape subgraphs), with the same inputs and outputs.

The weights are random (torch.manual_seed(0); GPT-2's normal with std 0.02,
biases too); the layer norms' scales and shifts are perturbed from 1 and 0
so that a wrong one shows. `--config small`
has GPT-2 small's sizes (d 768, 12 heads, 12 layers, vocabulary 50257);
`tiny` (d 64, 4 heads, 2 layers, vocabulary 128) is the test suite's.
Needs torch and onnx (PyPI); bench/torch_decode_peer.py times the same module
under torch.compile.
"""
import argparse
import math
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

CONFIGS = {
    "tiny": dict(d=64, heads=4, layers=2, vocab=128, positions=64),
    "small": dict(d=768, heads=12, layers=12, vocab=50257, positions=1024),
}


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, k_cache, v_cache, positions, mask, in_place=True):
        """x [B, S, d]; the caches [B, heads, max, head_dim] are written at
        `positions` [S] (in place, or into new tensors, returned); mask
        [S, max] admits the keys to read."""
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        if in_place:
            k_cache.index_copy_(2, positions, k)
            v_cache.index_copy_(2, positions, v)
        else:
            k_cache = k_cache.index_copy(2, positions, k)
            v_cache = v_cache.index_copy(2, positions, v)
        y = F.scaled_dot_product_attention(q, k_cache, v_cache,
                                           attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x if in_place else (x, k_cache, v_cache)


class Decoder(nn.Module):
    """GPT-2: learned positions, pre-LayerNorm blocks, the head tied to the
    token embedding. forward() runs one step on a static cache."""

    def __init__(self, d, heads, layers, vocab, positions):
        super().__init__()
        self.d, self.heads = d, heads
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def new_cache(self, max_cache, device=None, dtype=torch.float32):
        shape = (1, self.heads, max_cache, self.d // self.heads)
        return [torch.zeros(shape, device=device, dtype=dtype)
                for _ in range(2 * len(self.blocks))]

    def forward(self, ids, past_len, cache):
        """ids [1, S]; past_len: int64 [1]; cache: the list new_cache made,
        written in place. Returns the last position's logits [1, vocab]."""
        s = ids.shape[1]
        positions = past_len + torch.arange(s, device=ids.device)
        max_cache = cache[0].shape[2]
        keys = torch.arange(max_cache, device=ids.device)
        mask = keys[None, :] <= positions[:, None]
        x = self.wte(ids) + self.wpe(positions)[None]
        for i, block in enumerate(self.blocks):
            x = block(x, cache[2 * i], cache[2 * i + 1], positions, mask)
        last = self.ln_f(x[:, -1])
        return last @ self.wte.weight.t()


class FunctionalStep(nn.Module):
    """The decoder step with the ONNX graph's inputs and outputs (caches
    returned, not written in place), for torch.onnx.export."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, ids, past_len, *cache):
        m = self.decoder
        positions = past_len + torch.arange(ids.shape[1])
        keys = torch.arange(cache[0].shape[2])
        mask = keys[None, :] <= positions[:, None]
        x = m.wte(ids) + m.wpe(positions)[None]
        present = []
        for i, block in enumerate(m.blocks):
            x, k, v = block(x, cache[2 * i], cache[2 * i + 1], positions,
                            mask, in_place=False)
            present += [k, v]
        logits = m.ln_f(x[:, -1]) @ m.wte.weight.t()
        return (logits.argmax(-1, keepdim=True), past_len + ids.shape[1],
                logits, *present)


def torchscript_onnx(model, max_cache, path):
    """The step as PyTorch's TorchScript exporter writes it (opset 18):
    index_copy becomes ScatterElements over indices it expands from shape
    subgraphs, SDPA a MatMul/Softmax chain; `seq` is a dynamic axis."""
    layers = range(len(model.blocks))
    caches = model.new_cache(max_cache)
    names_in = ["ids", "past_len"] + [f"past_{w}_{i}" for i in layers
                                      for w in ("key", "value")]
    names_out = ["next_id", "next_len", "logits"] + [
        f"present_{w}_{i}" for i in layers for w in ("key", "value")]
    torch.onnx.export(FunctionalStep(model).eval(),
                      (torch.tensor([[1, 2]]), torch.tensor([0]), *caches),
                      path, opset_version=18, dynamo=False,
                      input_names=names_in, output_names=names_out,
                      dynamic_axes={"ids": {1: "seq"}})
    return onnx.load(path)


def make_decoder(config):
    torch.manual_seed(0)
    model = Decoder(**CONFIGS[config]).eval()
    with torch.no_grad():
        for m in model.modules():
            # GPT-2's initialization (normal, std 0.02), biases too.
            if isinstance(m, (nn.Linear, nn.Embedding)):
                for p in m.parameters():
                    p.normal_(0.0, 0.02)
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.1 * torch.randn_like(m.weight))
                m.bias.copy_(0.1 * torch.randn_like(m.bias))
    return model


def to_onnx(model, max_cache):
    """The decoder step as an ONNX graph (written node by node: the
    exporters write a static cache's update as ScatterND over computed
    indices; TensorScatter says what it is)."""
    d, heads = model.d, model.heads
    head_dim = d // heads
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array),
                                             name))
        return name

    def weight(t):
        return t.detach().numpy().astype(np.float32)

    def node(op, inputs, outputs=None, name=None, **attrs):
        name = name or f"{op}_{len(nodes)}"
        outputs = outputs or [name + "_out"]
        nodes.append(helper.make_node(op, inputs, outputs, name=name,
                                      **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def layer_norm(x, ln, name):
        return node("LayerNormalization",
                    [x, init(name + ".weight", weight(ln.weight)),
                     init(name + ".bias", weight(ln.bias))],
                    name=name, axis=-1, epsilon=ln.eps)

    def linear(x, lin, name):
        y = node("MatMul", [x, init(name + ".weight_t",
                                    weight(lin.weight).T)], name=name)
        return node("Add", [y, init(name + ".bias", weight(lin.bias))],
                    name=name + "_bias")

    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    # Positions past_len .. past_len + seq - 1, from the ids' shape.
    seq = node("Shape", ["ids"], name="seq", start=1, end=2)
    steps = node("Range", [init("zero", np.array(0, np.int64)),
                           node("Squeeze", [seq], name="seq_scalar"),
                           init("one", np.array(1, np.int64))],
                 name="steps")
    positions = node("Add", ["past_len", steps], name="positions")
    node("Add", ["past_len", seq], ["next_len"], name="next_len")
    # mask [1, 1, seq, max]: key j is read by query i when j <= position i.
    mask = node("LessOrEqual",
                [init("key_positions", np.arange(max_cache, dtype=np.int64)
                      .reshape(1, max_cache)),
                 node("Unsqueeze", [positions, init("last_axis", i64(1))],
                      name="query_positions")],
                name="admitted")
    mask = node("Unsqueeze", [mask, init("head_axes", i64(0, 1))],
                name="mask")
    x = node("Add", [node("Gather", [init("wte", weight(model.wte.weight)),
                                     "ids"], name="tokens"),
                     node("Gather", [init("wpe", weight(model.wpe.weight)),
                                     positions], name="position_rows")],
             name="embedded")
    split_shape = init("split_heads", i64(1, -1, heads, head_dim))
    merge_shape = init("merge_heads", i64(1, -1, d))
    thirds = init("thirds", i64(d, d, d))
    for i, block in enumerate(model.blocks):
        p = f"h{i}"
        q, k, v = node("Split", [linear(layer_norm(x, block.ln1, p + ".ln1"),
                                        block.qkv, p + ".qkv"), thirds],
                       [p + ".q", p + ".k", p + ".v"], name=p + ".split",
                       axis=2)
        q, k, v = (node("Transpose", [node("Reshape", [t, split_shape],
                                           name=f"{t}_split")],
                        name=f"{t}_heads", perm=[0, 2, 1, 3])
                   for t in (q, k, v))
        present = []
        for what, new in (("key", k), ("value", v)):
            present.append(node("TensorScatter",
                                [f"past_{what}_{i}", new, "past_len"],
                                [f"present_{what}_{i}"],
                                name=f"{p}.cache_{what}", axis=2))
        y = node("Attention", [q, present[0], present[1], mask],
                 name=p + ".attention")
        y = node("Reshape", [node("Transpose", [y], name=p + ".merge",
                                  perm=[0, 2, 1, 3]), merge_shape],
                 name=p + ".merged")
        x = node("Add", [x, linear(y, block.proj, p + ".proj")],
                 name=p + ".residual1")
        h = linear(layer_norm(x, block.ln2, p + ".ln2"), block.fc, p + ".fc")
        h = node("Gelu", [h], name=p + ".gelu", approximate="tanh")
        x = node("Add", [x, linear(h, block.out, p + ".out")],
                 name=p + ".residual2")
    last = node("Slice", [x, init("last_start", i64(-1)),
                          init("last_end", i64(np.iinfo(np.int64).max)),
                          init("seq_axis", i64(1))], name="last_position")
    last = node("Reshape", [last, init("row", i64(1, d))], name="last_row")
    logits = node("Gemm", [layer_norm(last, model.ln_f, "ln_f"), "wte"],
                  ["logits"], name="head", transB=1)
    node("ArgMax", [logits], ["next_id"], name="greedy", axis=1, keepdims=1)

    f32, i64t = TensorProto.FLOAT, TensorProto.INT64
    cache_shape = [1, heads, max_cache, head_dim]
    layers = range(len(model.blocks))
    inputs = [helper.make_tensor_value_info("ids", i64t, [1, "seq"]),
              helper.make_tensor_value_info("past_len", i64t, [1])]
    inputs += [helper.make_tensor_value_info(f"past_{w}_{i}", f32,
                                             cache_shape)
               for i in layers for w in ("key", "value")]
    outputs = [helper.make_tensor_value_info("next_id", i64t, [1, 1]),
               helper.make_tensor_value_info("next_len", i64t, [1]),
               helper.make_tensor_value_info("logits", f32,
                                             [1, model.wte.num_embeddings])]
    outputs += [helper.make_tensor_value_info(f"present_{w}_{i}", f32,
                                              cache_shape)
                for i in layers for w in ("key", "value")]
    graph = helper.make_graph(nodes, "gpt2_decoder_step", inputs, outputs,
                              inits)
    proto = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 24)], producer_name="export_decoder.py")
    onnx.checker.check_model(proto, full_check=True)
    return proto


def greedy_reference(model, prompt, max_cache, steps):
    """PyTorch's last-position logits after the prompt and after each of
    `steps` greedy tokens, and those tokens."""
    cache = model.new_cache(max_cache)
    logits, tokens = [], []
    ids, past = prompt, torch.tensor([0])
    with torch.no_grad():
        for _ in range(steps + 1):
            out = model(ids, past, cache)
            logits.append(out[0].numpy())
            past = past + ids.shape[1]
            ids = out.argmax(-1, keepdim=True)
            tokens.append(int(ids))
    return np.stack(logits), np.array(tokens[:steps], dtype=np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--config", choices=CONFIGS, default="tiny")
    parser.add_argument("--max-cache", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=8)
    parser.add_argument("--check-steps", type=int, default=8)
    parser.add_argument("--exporter", choices=["graph", "torchscript"],
                        default="graph",
                        help="write the ONNX graph node by node (TensorScatter"
                        ", Attention; opset 24) or with torch.onnx.export")
    args = parser.parse_args()
    if args.prompt + args.check_steps > args.max_cache:
        parser.error("--prompt plus --check-steps exceed --max-cache")
    os.makedirs(args.out, exist_ok=True)
    model = make_decoder(args.config)
    path = os.path.join(args.out, "decoder.onnx")
    if args.exporter == "graph":
        proto = to_onnx(model, args.max_cache)
        onnx.save(proto, path)
    else:
        proto = torchscript_onnx(model, args.max_cache, path)
    generator = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, model.wte.num_embeddings, (1, args.prompt),
                           generator=generator)
    logits, tokens = greedy_reference(model, prompt, args.max_cache,
                                      args.check_steps)
    np.save(os.path.join(args.out, "prompt.npy"), prompt.numpy())
    np.save(os.path.join(args.out, "tokens.npy"), tokens)
    np.save(os.path.join(args.out, "logits.npy"), logits.astype(np.float32))
    print(f"{path}: {len(proto.graph.node)} nodes, "
          f"{os.path.getsize(path) / 1e6:.1f} MB; PyTorch's greedy tokens "
          f"{tokens.tolist()}")


if __name__ == "__main__":
    main()
