"""torch.compile(backend="fusec") against torch.compile's Inductor (default
and mode="reduce-overhead") and eager, on issue 32's models, one JSON line
per model:

    python3 torch_backend_models.py [--small] [--models NAME,...]
        [--warm-caches]

The models (test/models/onnx/export_models.py's classes, as
torch_attention_models.py builds them, seeded random weights, eval mode,
under torch.no_grad), in bf16 on CUDA when there is a GPU, else in f32 on
the CPU:

    gpt2    ids int64[1,1024] -> GPT-2 small (12 blocks, d 768, 12 heads,
            vocabulary 50257), attention through F.scaled_dot_product_
            attention (is_causal)
    bert    x[8,512,768] -> 12 BERT-base encoder layers, SDPA attention
    llama   ids int64[1,1024] -> 12 Llama blocks (d 768, 12 heads, MLP
            2048, RMSNorm, rotary, SiLU gate; attention written out with an
            additive causal mask), vocabulary 32000
    mlp     x[4096,1024] -> LayerNorm, Linear(1024, 4096), GELU,
            Linear(4096, 1024), + x

--small: the same classes at the test sizes (d 64, 2 blocks; mlp d 64).

Per backend: "<backend>_first_s", the first call (dynamo, the backend's
compile, one run) in seconds, and "<backend>_us", the median of 50 warm
calls (CUDA events on the GPU, wall clock on the CPU) in microseconds;
"fusec_max_abs_diff" and "inductor_max_abs_diff" compare each to eager.
Both compilers start from empty caches (fresh FUSEC_CACHE_DIR and
TORCHINDUCTOR_CACHE_DIR) unless --warm-caches; reduce-overhead's first call
comes after Inductor's on the same model and reuses what that compiled.
Ops the fusec backend left to eager PyTorch are logged on stderr (logger
"fusec.torch").
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true",
                        help="the test-size models (a quick check)")
    parser.add_argument("--models", default="gpt2,bert,llama,mlp",
                        help="comma-separated subset")
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep fusec's and Inductor's caches")
    return parser.parse_args()


args = parse_args()
if not args.warm_caches:
    # Before torch and fusec read them.
    os.environ["FUSEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusec-cache-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(
        prefix="inductor-cache-")

import torch  # noqa: E402

import fusec.torch  # noqa: E402,F401  (registers backend="fusec")
import torch_attention_models as tam  # noqa: E402

m = tam.m  # export_models

REAL = {
    "gpt2": (0, lambda: m.Gpt2(d=768, heads=12, vocab=50257, seq=1024,
                               layers=12),
             lambda: torch.randint(0, 50257, (1, 1024))),
    "bert": (1, lambda: m.BertEncoder(d=768, heads=12, layers=12),
             lambda: torch.randn(8, 512, 768)),
    "llama": (2, lambda: m.Llama(d=768, heads=12, vocab=32000, seq=1024,
                                 layers=12, ffn=2048),
              lambda: torch.randint(0, 32000, (1, 1024))),
    "mlp": (3, lambda: m.MlpBlock(d=1024), lambda: torch.randn(4096, 1024)),
}
SMALL = {
    "gpt2": (0, lambda: m.Gpt2(), lambda: torch.randint(0, 128, (1, 16))),
    "bert": (1, lambda: m.BertEncoder(), lambda: torch.randn(2, 32, 64)),
    "llama": (2, lambda: m.Llama(), lambda: torch.randint(0, 128, (1, 16))),
    "mlp": (3, lambda: m.MlpBlock(), lambda: torch.randn(16, 64)),
}
SDPA_MODELS = ("gpt2", "bert")

BACKENDS = {
    "fusec": {"backend": "fusec"},
    "inductor": {},
    "reduce_overhead": {"mode": "reduce-overhead"},
}


def call_us(fn, x, cuda, reps=50, warm=10):
    if cuda:
        return tam.device_us(fn, x, reps, warm)
    for _ in range(warm):
        fn(x)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def build(name, models, dtype, device):
    seed, make_module, make_input = models[name]
    module, x = tam.build(seed, make_module, make_input, dtype, device)
    if name in SDPA_MODELS:
        tam.set_sdpa(module, True)
    return module, x


def run_model(name, models, dtype, device):
    cuda = device == "cuda"
    module, x = build(name, models, dtype, device)
    result = {"model": name, "dtype": str(dtype).removeprefix("torch."),
              "device": device}
    with torch.no_grad():
        expected = module(x)
        result["eager_us"] = round(call_us(module, x, cuda), 1)
        for backend, options in BACKENDS.items():
            torch._dynamo.reset()
            compiled = torch.compile(module, **options)
            start = time.perf_counter()
            y = compiled(x)
            if cuda:
                torch.cuda.synchronize()
            result[backend + "_first_s"] = round(time.perf_counter() - start,
                                                 3)
            result[backend + "_us"] = round(call_us(compiled, x, cuda), 1)
            if backend != "reduce_overhead":
                result[backend + "_max_abs_diff"] = float(
                    (y.float() - expected.float()).abs().max())
            del compiled, y
    print(json.dumps(result), flush=True)
    if cuda:
        torch.cuda.empty_cache()


def main():
    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu",
                                                           torch.float32)
    models = SMALL if args.small else REAL
    for name in args.models.split(","):
        if name not in models:
            sys.exit(f"unknown model {name!r} (known: {', '.join(models)})")
        run_model(name, models, dtype, device)


if __name__ == "__main__":
    main()
