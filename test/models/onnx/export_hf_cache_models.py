"""Exports one decoder step of transformers' GPT-2 and Llama (small random
weights) WITH a key/value cache that grows by concatenation, the way
"decoder_with_past" tutorials do: the TorchScript exporter at opset 17,
do_constant_folding, use_cache=True.

Inputs: input_ids [batch, seq] and, per layer L, past_key_L and
past_value_L [batch, kv_heads, past, head_dim] (the legacy tuple cache;
Llama's is wrapped into a DynamicCache.from_legacy_cache). Outputs: logits
[batch, seq, vocab] and present_key_L, present_value_L [batch, kv_heads,
past + seq, head_dim] (= Concat(past, new) on axis 2). dynamic_axes name
the input dims "batch", "seq" and "past"; the exporter names the output
dims. No attention_mask input: both models derive position ids
(arange(past, past + seq)) and the causal mask from the past length.

Both use the default attention (SDPA): under tracing, transformers 4.49
builds an explicit additive 4-D causal mask from the past length rather than
SDPA's is_causal. GPT-2 also as DIR/hf_gpt2_eager_cache.onnx
(attn_implementation="eager", same weights, checked against the same
hf_gpt2_cache_* samples): its mask is a Slice of the constant causal buffer,
bias[:, :, past : past + seq, : past + seq], with starts/ends computed from
the shapes.

The configs are export_hf_models.py's (GPT-2: n_layer=2, n_embd=64,
n_head=4, vocab 100, n_positions=128; Llama: 2 layers, hidden 64, 4 heads,
2 kv heads, intermediate 128, vocab 100), each built right after
torch.manual_seed(0), so the GPT-2 weights equal hf_gpt2_dynamic.onnx's.

Samples (batch, past, seq) = (1, 5, 1), (2, 16, 3), (1, 30, 1): random ids
< vocab, random normal past tensors (seeded), and PyTorch's outputs, one .npy
per input and output: DIR/hf_<model>_cache_p<P>s<S>_<name>.npy with <name>
input_ids, past_key_<L>, past_value_<L>, logits, present_key_<L>,
present_value_<L>. The models: DIR/hf_gpt2_cache.onnx,
DIR/hf_gpt2_eager_cache.onnx and DIR/hf_llama_cache.onnx. When onnxruntime
can be imported, each model is run at each sample and the largest
|ORT - PyTorch| is printed; a PyTorch self-check also compares (prefix
without cache, then a step with its cache) against one pass over the whole
sequence.

Made with torch 2.15 (scripts/install-torch.sh) and transformers 4.49
(5.x's decoder masks use aten::diff, which this exporter cannot write):
    pip install transformers==4.49.0 onnxruntime   # in that venv
    python3 export_hf_cache_models.py DIR [--generation-only]

Also a greedy generation per model (GPT-2, Llama): a 4-token prompt on
empty caches, then 6 tokens one at a time, the presents fed back as the
pasts: DIR/hf_<model>_cache_gen_{prompt,tokens,logits}.npy (the prompt,
each call's token, each call's last-position logits).
"""
import os
import sys
import warnings

import numpy as np
import torch
from transformers import (DynamicCache, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM)

warnings.filterwarnings("ignore")

SAMPLES = [(1, 5, 1), (2, 16, 3), (1, 30, 1)]  # (batch, past, seq)
EXPORT_SAMPLE = 1  # traced at 2 x 16 x 3: no dim is 1, seq > 1
VOCAB = 100


class CacheStep(torch.nn.Module):
    """(input_ids, past_key_0, past_value_0, ...) -> (logits, present_key_0,
    present_value_0, ...): one decoder step over a legacy tuple cache."""

    def __init__(self, model, layers, dynamic_cache):
        super().__init__()
        self.model, self.layers = model, layers
        self.dynamic_cache = dynamic_cache

    def forward(self, input_ids, *past):
        legacy = tuple((past[2 * i], past[2 * i + 1])
                       for i in range(self.layers))
        cache = DynamicCache.from_legacy_cache(legacy) \
            if self.dynamic_cache else legacy
        out = self.model(input_ids=input_ids, past_key_values=cache,
                         use_cache=True, return_dict=True)
        presents = out.past_key_values
        if isinstance(presents, DynamicCache):
            presents = presents.to_legacy_cache()
        flat = [out.logits]
        for key, value in presents:
            flat += [key, value]
        return tuple(flat)


def gpt2(attention):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB,
                   n_positions=128, use_cache=True,
                   attn_implementation=attention)).eval()
    # GPT2Model copies the choice at construction (it picks the mask).
    assert model.transformer._attn_implementation == attention
    return model


def models():
    """(model name, samples' name, model, layers, kv_heads, head_dim,
    uses DynamicCache)."""
    yield "gpt2", "gpt2", gpt2("sdpa"), 2, 4, 16, False
    yield "gpt2_eager", "gpt2", gpt2("eager"), 2, 4, 16, False
    torch.manual_seed(0)
    llama = LlamaForCausalLM(
        LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=128,
                    vocab_size=VOCAB, use_cache=True,
                    attn_implementation="sdpa")).eval()
    yield "llama", "llama", llama, 2, 2, 16, True


def names(layers):
    inputs, outputs = ["input_ids"], ["logits"]
    for i in range(layers):
        inputs += [f"past_key_{i}", f"past_value_{i}"]
        outputs += [f"present_key_{i}", f"present_value_{i}"]
    return inputs, outputs


def self_check(step, layers, kv_heads, head_dim):
    """Largest |prefix-then-cached-step - whole sequence| of the logits."""
    ids = torch.randint(0, VOCAB, (2, 12),
                        generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        whole = step.model(input_ids=ids, use_cache=False).logits
        empty = tuple(torch.zeros(2, kv_heads, 0, head_dim)
                      for _ in range(2 * layers))
        first = step(ids[:, :9], *empty)
        second = step(ids[:, 9:], *first[1:])
    return float((torch.cat([first[0], second[0]], 1) - whole).abs().max())


GENERATED = 6  # greedy tokens after the prompt


def generation(step, layers, kv_heads, head_dim):
    """A greedy generation through the step: a 4-token prompt on empty
    caches, then one token at a time with the presents as the next pasts.
    Returns the prompt [1, 4], every call's token [1 + GENERATED] and
    last-position logits [1 + GENERATED, vocab]."""
    prompt = torch.randint(0, VOCAB, (1, 4),
                           generator=torch.Generator().manual_seed(2))
    caches = tuple(torch.zeros(1, kv_heads, 0, head_dim)
                   for _ in range(2 * layers))
    ids, tokens, logits = prompt, [], []
    with torch.no_grad():
        for _ in range(1 + GENERATED):
            out = step(ids, *caches)
            last = out[0][0, -1]
            logits.append(last.numpy())
            tokens.append(int(last.argmax()))
            ids = torch.tensor([[tokens[-1]]])
            caches = out[1:]
    return (prompt.numpy(), np.array(tokens, dtype=np.int64),
            np.stack(logits).astype(np.float32))


def write_generation(directory, name, step, layers, kv_heads, head_dim):
    prompt, tokens, logits = generation(step, layers, kv_heads, head_dim)
    for part, value in [("prompt", prompt), ("tokens", tokens),
                        ("logits", logits)]:
        np.save(os.path.join(directory, f"hf_{name}_cache_gen_{part}.npy"),
                value)


def main(directory, generation_only=False):
    for name, sample_name, model, layers, kv_heads, head_dim, dynamic_cache \
            in models():
        step = CacheStep(model, layers, dynamic_cache)
        if name != "gpt2_eager":
            write_generation(directory, name, step, layers, kv_heads, head_dim)
        if generation_only:
            continue
        input_names, output_names = names(layers)
        generator = torch.Generator().manual_seed(0)
        samples = []
        # The outputs before the export: tracing leaves the module changed.
        for batch, past, seq in SAMPLES:
            ids = torch.randint(0, VOCAB, (batch, seq), generator=generator)
            pasts = [torch.randn(batch, kv_heads, past, head_dim,
                                 generator=generator)
                     for _ in range(2 * layers)]
            with torch.no_grad():
                outs = step(ids, *pasts)
            tag = f"hf_{sample_name}_cache_p{past}s{seq}"
            for key, value in zip(input_names + output_names,
                                  [ids, *pasts, *outs]):
                file = os.path.join(directory, f"{tag}_{key}.npy")
                if sample_name == name:
                    np.save(file, value.numpy())
                else:  # Another attention: the same inputs, its outputs.
                    saved = np.load(file)
                    assert key in output_names or np.array_equal(
                        saved, value.numpy()), file
                    assert np.abs(saved - value.numpy()).max() <= 1e-5, file
            samples.append((tag, [ids, *pasts], outs))
        print(f"{name}: PyTorch cached vs uncached logits, max abs diff "
              f"{self_check(step, layers, kv_heads, head_dim):.3g}")
        dynamic_axes = {"input_ids": {0: "batch", 1: "seq"}}
        for key in input_names[1:]:
            dynamic_axes[key] = {0: "batch", 2: "past"}
        path = os.path.join(directory, f"hf_{name}_cache.onnx")
        torch.onnx.export(
            step, tuple(samples[EXPORT_SAMPLE][1]), path,
            input_names=input_names, output_names=output_names,
            dynamic_axes=dynamic_axes, opset_version=17,
            do_constant_folding=True, dynamo=False)
        check(path, samples, input_names, output_names)


def check(path, samples, input_names, output_names):
    try:
        import onnxruntime
    except ImportError:
        print(f"{path}: onnxruntime missing, not checked")
        return
    session = onnxruntime.InferenceSession(
        path, providers=["CPUExecutionProvider"])
    for tag, inputs, outs in samples:
        got = session.run(output_names, {key: value.numpy() for key, value
                                         in zip(input_names, inputs)})
        diffs = {key: float(np.abs(g - o.numpy()).max())
                 for key, g, o in zip(output_names, got, outs)}
        shapes = {key: list(g.shape) for key, g in zip(output_names, got)}
        worst = max(diffs.values())
        print(f"{tag}: ORT vs PyTorch max abs diff {worst:.3g} "
              f"({'ok' if worst <= 1e-4 else 'FAIL'}); logits "
              f"{shapes['logits']}, present_key_0 {shapes['present_key_0']}")


if __name__ == "__main__":
    # --generation-only: the greedy generations alone (the models as they
    # are).
    main(sys.argv[1], "--generation-only" in sys.argv[2:])
