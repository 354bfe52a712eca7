#!/usr/bin/env python3
"""Writes hf_gpt2_eager_dynamo.onnx: transformers' GPT-2 (2 layers, width 64,
4 heads, vocabulary 100, random weights from seed 0, eager attention, no
cache) exported by PyTorch's dynamo exporter (opset 20) with its batch
(1..8) and sequence (2..64) dims dynamic, weights inline; and, for ids of
[1, 5] and [2, 17] (seeded), the logits onnxruntime computes from that
file, as hf_gpt2_dynamo_<B>x<S>_ids.npy and hf_gpt2_eager_dynamo_<B>x<S>_out.npy.
Its packed-head attention (one qkv projection split into heads) is fused
into an attention whose result keeps the heads apart, [B, H, T, D].

    python3 export_hf_dynamo_models.py   (torch, transformers 4.49, onnx,
                                          onnxscript, onnxruntime, numpy)
"""
import os

import numpy as np
import onnx
import onnxruntime
import torch
from transformers import GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                        n_positions=128, use_cache=False,
                        attn_implementation="eager")
    model = Logits(GPT2LMHeadModel(config).eval()).eval()
    path = os.path.join(HERE, "hf_gpt2_eager_dynamo.onnx")
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=2, max=64)
    with torch.no_grad():
        torch.onnx.export(model, (torch.randint(0, 100, (2, 16)),), path,
                          dynamo=True, input_names=["input_ids"],
                          output_names=["out"],
                          dynamic_shapes={"input_ids": {0: batch, 1: seq}})
    # One file: the weights inline rather than beside it.
    onnx.save(onnx.load(path), path)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")
    session = onnxruntime.InferenceSession(
        path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for b, s in [(1, 5), (2, 17)]:
        ids = rng.integers(0, 100, (b, s)).astype(np.int64)
        np.save(os.path.join(HERE, f"hf_gpt2_dynamo_{b}x{s}_ids.npy"), ids)
        np.save(os.path.join(HERE, f"hf_gpt2_eager_dynamo_{b}x{s}_out.npy"),
                session.run(None, {"input_ids": ids})[0])


if __name__ == "__main__":
    main()
