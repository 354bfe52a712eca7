"""The deployment issue's --precision models: f32 exports of GPT-2 small
(T = 1024) and BERT-base (8 x 128), run by fusec in f32 and with
--precision=bf16, against PyTorch's f32 outputs and torch.compile under
torch.autocast(dtype=torch.bfloat16) on the same module:

    python3 torch_precision_models.py export DIR
    python3 torch_precision_models.py peers

The modules are torch_attention_models.py's (export_models.py's classes with
attention written out, seeded random weights), in f32. `export` writes
DIR/<model>.onnx, its input DIR/<model>_input_0.pb and PyTorch's f32 output
DIR/<model>_output_0.pb (computed on the GPU with TF32 off, PyTorch's
default), for

    fusec DIR/<model>.onnx --precision=bf16 --run
        --inputs DIR/<model>_input_0.pb --expect DIR/<model>_output_0.pb
        --expect-rel-l2=2e-2 --expect-top1=0.99

and fusec-bench --model=DIR/<model>.onnx [--precision=bf16].

`peers` times one forward of each module under torch.no_grad with CUDA
events (median of 50 calls after 10 warm-up calls): eager f32, eager under
autocast, torch.compile under autocast in its default mode and in
"reduce-overhead" (CUDA graphs); and how far autocast's output is from f32
(relative L2 error, and for logits the fraction of positions whose top token
agrees). One JSON line per model, whose "case" joins with fusec-bench's:

    {"case": "model:gpt2_small_f32.onnx", "eager_f32_us": ...,
     "eager_autocast_us": ..., "compile_autocast_us": ...,
     "compile_autocast_reduce_overhead_us": ..., "autocast_rel_l2": ...,
     "autocast_top1": ...}
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_attention_models as tam  # noqa: E402

m = tam.m

# name -> (seed, module factory, input factory, input name), built in f32:
# torch_attention_models' real-size modules, BERT-base at 8 x 128.
_gpt2 = tam.REAL["gpt2_small_bf16"]
_bert = tam.REAL["bert_base_bf16"]
MODELS = {
    "gpt2_small_f32": _gpt2,
    "bert_base_f32": (_bert[0], _bert[1], lambda: torch.randn(8, 128, 768),
                      _bert[3]),
}


def relative_l2(actual, expected):
    actual, expected = actual.double(), expected.double()
    return ((actual - expected).norm() / expected.norm()).item()


def top1(actual, expected):
    return (actual.argmax(-1) == expected.argmax(-1)).double().mean().item()


def peers():
    if not torch.cuda.is_available():
        sys.exit("torch_precision_models.py peers: needs a CUDA GPU")
    for name, (seed, make_module, make_input, _) in MODELS.items():
        module, x = tam.build(seed, make_module, make_input, torch.float32,
                              "cuda")
        result = {"case": f"model:{name}.onnx"}
        with torch.no_grad():
            y32 = module(x)
            result["eager_f32_us"] = tam.device_us(module, x)

            def autocast(fn):
                def run(x):
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        return fn(x)
                return run

            y16 = autocast(module)(x)
            result["autocast_rel_l2"] = relative_l2(y16, y32)
            if name.startswith("gpt2"):
                result["autocast_top1"] = top1(y16, y32)
            result["eager_autocast_us"] = tam.device_us(autocast(module), x)
            for mode, key in ((None, "compile_autocast_us"),
                              ("reduce-overhead",
                               "compile_autocast_reduce_overhead_us")):
                torch._dynamo.reset()
                compiled = torch.compile(module, mode=mode)
                result[key] = tam.device_us(autocast(compiled), x)
                del compiled
        print(json.dumps({k: round(v, 1 if k.endswith("_us") else 5)
                          if isinstance(v, float) else v
                          for k, v in result.items()}), flush=True)
        del module, x
        torch.cuda.empty_cache()


def main():
    tam.run_command(__doc__, lambda args: (MODELS, torch.float32),
                    lambda models, dtype: peers())


if __name__ == "__main__":
    main()
