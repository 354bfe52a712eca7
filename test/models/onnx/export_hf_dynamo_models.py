#!/usr/bin/env python3
"""Writes models exported by PyTorch's dynamo exporter (opset 20) with their
batch (1..8) and sequence (2..64) dims dynamic, weights inline (random,
from seed 0; no cache):

- hf_gpt2_eager_dynamo.onnx: transformers' GPT-2 (2 layers, width 64, 4
  heads, vocabulary 100), eager attention. Its packed-head attention (one
  qkv projection split into heads) is fused into an attention whose result
  keeps the heads apart, [B, H, T, D].
- hf_llama_sdpa_dynamo.onnx: transformers' Llama (2 layers, width 64, 4
  heads over 2 key/value heads, vocabulary 100), SDPA attention, which the
  exporter writes with k^T's batch dims merged around the transpose.

and, for ids of [1, 5] and [2, 17] (seeded, hf_dynamo_<B>x<S>_ids.npy,
read by both), the logits onnxruntime computes from each file
(hf_<model>_dynamo_<B>x<S>_out.npy).

    python3 export_hf_dynamo_models.py   (torch, transformers 4.49, onnx,
                                          onnxscript, onnxruntime, numpy)
"""
import os

import numpy as np
import onnx
import onnxruntime
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def export(model, name, ids_list):
    path = os.path.join(HERE, name + ".onnx")
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=2, max=64)
    with torch.no_grad():
        torch.onnx.export(Logits(model.eval()).eval(),
                          (torch.randint(0, 100, (2, 16)),), path,
                          dynamo=True, input_names=["input_ids"],
                          output_names=["out"],
                          dynamic_shapes={"input_ids": {0: batch, 1: seq}})
    # One file: the weights inline rather than beside it.
    onnx.save(onnx.load(path), path)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")
    session = onnxruntime.InferenceSession(
        path, providers=["CPUExecutionProvider"])
    for ids in ids_list:
        b, s = ids.shape
        np.save(os.path.join(HERE, f"{name}_{b}x{s}_out.npy"),
                session.run(None, {"input_ids": ids})[0])


def main():
    rng = np.random.default_rng(0)
    ids_list = []
    for b, s in [(1, 5), (2, 17)]:
        ids = rng.integers(0, 100, (b, s)).astype(np.int64)
        np.save(os.path.join(HERE, f"hf_dynamo_{b}x{s}_ids.npy"), ids)
        ids_list.append(ids)
    torch.manual_seed(0)
    export(GPT2LMHeadModel(GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=128,
        use_cache=False, attn_implementation="eager")),
        "hf_gpt2_eager_dynamo", ids_list)
    torch.manual_seed(0)
    export(LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=128, vocab_size=100,
        max_position_embeddings=128, use_cache=False,
        attn_implementation="sdpa")),
        "hf_llama_sdpa_dynamo", ids_list)


if __name__ == "__main__":
    main()
