"""Issue 30's real-size attention models, exported for fusec and timed
under PyTorch, in one device call with `fusec-bench --model=...`:

    python3 torch_attention_models.py export DIR [--small]
    python3 torch_attention_models.py peers [--small]

The models are test/models/onnx/export_models.py's classes (imported from
it: the folder models/onnx next to this script, as staged, else the
checkout's test/models/onnx), at real sizes, with seeded random weights,
in bf16 on the GPU:

    gpt2_small_bf16  ids int64[1,1024] -> GPT-2 small: 12 blocks, d 768,
                     12 heads, vocabulary 50257, untied head
                     -> logits [1,1024,50257]
    bert_base_bf16   x[8,512,768] -> 12 BERT-base encoder layers (12 heads,
                     FFN 3072; hidden states in, no embeddings, no mask)

--small makes f32 models of the same classes (d 128, 2 heads of 64,
2 layers; gpt2_tiny_f32 at T = 128 over a vocabulary of 256,
bert_tiny_f32 on x[2,64,128]) on the GPU if there is one, else on the CPU:
a quick check that the export imports and runs in fusec.

`export` writes, per model, DIR/<model>.onnx with attention written out as
export_models.py writes it (q @ k^T / sqrt(hd), a masked_fill of a causal
mask buffer for GPT-2, softmax, @ v), exported by the TorchScript exporter
(dynamo=False: plain MatMul, Softmax, Transpose, Reshape and Split ops,
static shapes) at opset 17 with constant folding and saved at IR version 8
(Debian's libonnx 1.12 reads it; no external data below 2 GB), its input
DIR/<model>_input_0.pb and PyTorch's output DIR/<model>_output_0.pb (ONNX
TensorProtos, bf16 as BFLOAT16 raw data), for

    fusec DIR/<model>.onnx --run --inputs DIR/<model>_input_0.pb
        --expect DIR/<model>_output_0.pb --atol A

For bf16 it also prints how far PyTorch's bf16 output is from its f32 one:
the scale of a fair --atol.

`peers` times one forward of each model under torch.no_grad with CUDA
events (median of 50 calls after 10 warm-up calls): eager and torch.compile,
each with the attention written out and with
F.scaled_dot_product_attention (is_causal for GPT-2, no mask for BERT) in
the same module, with torch.compile's first call (compile and run) in
seconds. One JSON line per model, whose "case" joins with fusec-bench's
`--model=` lines:

    {"case": "model:gpt2_small_bf16.onnx", "eager_us": ..., "eager_sdpa_us":
     ..., "compile_us": ..., "compile_sdpa_us": ...,
     "compile_sdpa_graphs_us": ... (mode="reduce-overhead"), "compile_s":
     ..., "compile_sdpa_s": ...}
"""
import argparse
import copy
import inspect
import json
import os
import statistics
import sys
import time

import onnx
import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, next(
    (d for d in (os.path.join(here, "models", "onnx"),
                 os.path.join(here, "..", "test", "models", "onnx"))
     if os.path.isdir(d)), ""))
import export_models as m  # noqa: E402


class SdpaCausalSelfAttention(m.CausalSelfAttention):
    """export_models' GPT-2 attention with its core as one
    F.scaled_dot_product_attention call (no state of its own: set_sdpa
    switches a module between the two classes)."""

    def forward(self, x):
        b, s, _ = x.shape
        d, heads = self.d, self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (m.split_heads(t, b, s, d, heads) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, s, d))


class SdpaBertLayer(m.BertLayer):
    """export_models' BERT layer with its attention as one
    F.scaled_dot_product_attention call (see SdpaCausalSelfAttention)."""

    def forward(self, x):
        b, s, _ = x.shape
        d, heads = self.d, self.heads
        q, k, v = (m.split_heads(f(x), b, s, d, heads)
                   for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v)
        y = y.transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


SDPA_CLASSES = {m.CausalSelfAttention: SdpaCausalSelfAttention,
                m.BertLayer: SdpaBertLayer}


def set_sdpa(model, sdpa):
    """Switches every attention of `model` between written out and
    F.scaled_dot_product_attention, keeping its weights."""
    for module in model.modules():
        for written, fused in SDPA_CLASSES.items():
            if type(module) in (written, fused):
                module.__class__ = fused if sdpa else written


# name -> (seed, module factory, input factory, input name), at real size
# (bf16) and with --small (f32).
REAL = {
    "gpt2_small_bf16": (
        0, lambda: m.Gpt2(d=768, heads=12, vocab=50257, seq=1024,
                          layers=12),
        lambda: torch.randint(0, 50257, (1, 1024)), "ids"),
    "bert_base_bf16": (
        1, lambda: m.BertEncoder(d=768, heads=12, layers=12),
        lambda: torch.randn(8, 512, 768), "x"),
}
SMALL = {
    "gpt2_tiny_f32": (
        0, lambda: m.Gpt2(d=128, heads=2, vocab=256, seq=128, layers=2),
        lambda: torch.randint(0, 256, (1, 128)), "ids"),
    "bert_tiny_f32": (
        1, lambda: m.BertEncoder(d=128, heads=2, layers=2),
        lambda: torch.randn(2, 64, 128), "x"),
}


def build(seed, make_module, make_input, dtype, device):
    """The module (eval mode) and its input, drawn on the CPU from `seed`
    (the same on every machine), then moved; float inputs take `dtype`."""
    torch.manual_seed(seed)
    module = make_module()
    m.randomize_norms(module)
    x = make_input()
    if x.is_floating_point():
        x = x.to(dtype)
    return module.to(device, dtype).eval(), x.to(device)


def write_pb(tensor, path):
    """`tensor` as an ONNX TensorProto file; bf16 (which numpy lacks) as
    BFLOAT16 raw data."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype != torch.bfloat16:
        m.write_pb(tensor.numpy(), path)
        return
    proto = onnx.helper.make_tensor(
        "", onnx.TensorProto.BFLOAT16, list(tensor.shape),
        tensor.view(torch.int16).numpy().tobytes(), raw=True)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def export(models, folder, dtype, device):
    os.makedirs(folder, exist_ok=True)
    # The TorchScript exporter: torch 2.9 and later default to the dynamo
    # one, whose graphs fusec is not tested on; torch 1.x has only it.
    legacy = ({"dynamo": False} if "dynamo" in
              inspect.signature(torch.onnx.export).parameters else {})
    for name, (seed, make_module, make_input, input_name) in models.items():
        start = time.perf_counter()
        module, x = build(seed, make_module, make_input, dtype, device)
        path = os.path.join(folder, name + ".onnx")
        with torch.no_grad():
            y = module(x)
            torch.onnx.export(module, (x,), path, opset_version=17,
                              do_constant_folding=True,
                              input_names=[input_name], output_names=["y"],
                              **legacy)
        proto = onnx.load(path)
        if proto.ir_version > 8:
            proto.ir_version = 8  # readable by Debian's libonnx 1.12
        onnx.checker.check_model(proto)
        onnx.save(proto, path)
        write_pb(x, os.path.join(folder, name + "_input_0.pb"))
        write_pb(y, os.path.join(folder, name + "_output_0.pb"))
        ops = sorted(set(n.op_type for n in proto.graph.node))
        print(f"{name}: {len(proto.graph.node)} nodes ({' '.join(ops)}), "
              f"{os.path.getsize(path) / 1e6:.0f} MB, "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        if dtype != torch.float32:
            with torch.no_grad():
                y32 = copy.deepcopy(module).float()(
                    x.float() if x.is_floating_point() else x)
            print(f"  torch {str(dtype).removeprefix('torch.')} vs f32: max "
                  f"abs diff {(y.float() - y32).abs().max().item():.3g} "
                  f"(|y| max {y32.abs().max().item():.3g})", flush=True)
            del y32


def device_us(fn, x, reps=50, warm=10):
    """Median device time of one call, from CUDA events around it."""
    for _ in range(warm):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def peers(models, dtype):
    if not torch.cuda.is_available():
        sys.exit("torch_attention_models.py peers: needs a CUDA GPU")
    for name, (seed, make_module, make_input, _) in models.items():
        module, x = build(seed, make_module, make_input, dtype, "cuda")
        result = {"case": f"model:{name}.onnx"}
        with torch.no_grad():
            for sdpa, suffix in ((False, ""), (True, "_sdpa")):
                set_sdpa(module, sdpa)
                result["eager" + suffix + "_us"] = device_us(module, x)
                torch._dynamo.reset()
                start = time.perf_counter()
                compiled = torch.compile(module)
                compiled(x)
                torch.cuda.synchronize()
                result["compile" + suffix + "_s"] = (time.perf_counter() -
                                                     start)
                result["compile" + suffix + "_us"] = device_us(compiled, x)
            # The best mode there is: SDPA under CUDA graphs.
            torch._dynamo.reset()
            compiled = torch.compile(module, mode="reduce-overhead")
            result["compile_sdpa_graphs_us"] = device_us(compiled, x)
        keys = ["case", "eager_us", "eager_sdpa_us", "compile_us",
                "compile_sdpa_us", "compile_sdpa_graphs_us", "compile_s",
                "compile_sdpa_s"]
        print(json.dumps({k: result[k] if k == "case" else
                          round(result[k], 1 if k.endswith("_us") else 2)
                          for k in keys}), flush=True)
        del module, x, compiled
        torch.cuda.empty_cache()


def run_command(doc, choose, peers_of, add_arguments=lambda parser: None):
    """The scripts' command line, `export DIR` or `peers`: `choose(args)`
    gives (models, dtype); `peers_of(models, dtype)` times the peers."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("command", choices=["export", "peers"])
    parser.add_argument("folder", nargs="?",
                        help="export: the folder to write the models to")
    add_arguments(parser)
    args = parser.parse_args()
    models, dtype = choose(args)
    if args.command == "export":
        if not args.folder:
            parser.error("export needs the output folder")
        export(models, args.folder, dtype,
               "cuda" if torch.cuda.is_available() else "cpu")
    else:
        peers_of(models, dtype)


def main():
    run_command(
        __doc__,
        lambda args: ((SMALL, torch.float32) if args.small else
                      (REAL, torch.bfloat16)),
        peers,
        lambda parser: parser.add_argument(
            "--small", action="store_true",
            help="small f32 models (a check of the export and fusec's "
                 "import, on the CPU without a GPU)"))


if __name__ == "__main__":
    main()
