"""Exports transformers' models (small random weights) to ONNX the way
tutorials do. GPT-2, BERT and Llama: the TorchScript exporter at opset 17 with
dynamic_axes {"input_ids": {0: "batch", 1: "seq"}}. The exporter writes
shape subgraphs for the symbolic dims (Shape -> Gather -> Equal/Where ->
Expand, ConstantOfShape, Range); fusec folds them once the dims are bound
(by --input-shape or by the shapes of --inputs). Two samples per model,
1 x 32 and 2 x 17 tokens, with PyTorch's outputs. Swin, at static
shapes: its F.pad becomes ConstantOfShape -> Concat -> Reshape -> Slice ->
Transpose -> Reshape -> Cast, which fusec folds into Pad's pads.

Made with torch 2.15 (scripts/install-torch.sh) and transformers 4.49
(5.x's decoder masks use aten::diff, which this exporter cannot write):
    python3 export_hf_models.py DIR
writes DIR/hf_<model>_dynamic.onnx, DIR/hf_<model>_<B>x<T>_ids.npy and
DIR/hf_<model>_<B>x<T>_out.npy (1x32, 2x17, and 1x17: the 2x17's last
row); DIR/hf_swin.onnx, hf_swin_x.npy and
hf_swin_out.npy.
"""
import os
import sys
import warnings

import numpy as np
import torch
from transformers import (BertConfig, BertModel, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, SwinConfig, SwinModel)

warnings.filterwarnings("ignore")


class FirstOutput(torch.nn.Module):
    """The model's first output (logits or hidden states) from input_ids."""

    def __init__(self, model, decoder):
        super().__init__()
        self.model, self.decoder = model, decoder

    def forward(self, input_ids):
        if self.decoder:
            return self.model(input_ids=input_ids, use_cache=False)[0]
        return self.model(input_ids)[0]


def models():
    yield "gpt2", True, GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                   n_positions=128))
    yield "bert", False, BertModel(
        BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                   intermediate_size=128, vocab_size=100))
    yield "llama", True, LlamaForCausalLM(
        LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=128,
                    vocab_size=100))


def main(directory):
    torch.manual_seed(0)
    for name, decoder, model in models():
        wrapped = FirstOutput(model.eval(), decoder)
        samples = [torch.randint(0, 100, shape) for shape in [(1, 32), (2, 17)]]
        # The outputs before the export: tracing leaves the module changed
        # (its later outputs differ from the exported graph's).
        for ids in samples:
            with torch.no_grad():
                out = wrapped(ids)
            tag = f"hf_{name}_{ids.shape[0]}x{ids.shape[1]}"
            np.save(os.path.join(directory, f"{tag}_ids.npy"), ids.numpy())
            np.save(os.path.join(directory, f"{tag}_out.npy"), out.numpy())
        # A second length at batch 1: the last row of the 2 x 17 sample
        # (without a mask, each row is computed alone).
        np.save(os.path.join(directory, f"hf_{name}_1x17_ids.npy"),
                samples[1][1:].numpy())
        np.save(os.path.join(directory, f"hf_{name}_1x17_out.npy"),
                out[1:].numpy())
        torch.onnx.export(
            wrapped, (samples[0],),
            os.path.join(directory, f"hf_{name}_dynamic.onnx"),
            input_names=["input_ids"], output_names=["out"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}},
            opset_version=17, dynamo=False)
    swin = FirstOutput(
        SwinModel(SwinConfig(image_size=32, patch_size=4, embed_dim=16,
                             depths=[1, 1], num_heads=[2, 4],
                             window_size=4)).eval(), False)
    pixels = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        out = swin(pixels)
    np.save(os.path.join(directory, "hf_swin_x.npy"), pixels.numpy())
    np.save(os.path.join(directory, "hf_swin_out.npy"), out.numpy())
    torch.onnx.export(swin, (pixels,), os.path.join(directory, "hf_swin.onnx"),
                      input_names=["pixel_values"], output_names=["out"],
                      opset_version=17, dynamo=False)


if __name__ == "__main__":
    main(sys.argv[1])
