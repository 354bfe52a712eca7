"""PyTorch peers of `fusec-bench --model=...` on the GPU machine: the same
modules as test/models/onnx/export_models.py (same shapes; weights are
random, which does not change the timings), timed per call with eager
execution, torch.compile and torch.compile(mode="reduce-overhead"), each
with its compile time. Join with fusec-bench's output by "case".

    python3 torch_model_peers.py [DIR_WITH_export_models.py]
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else
                os.path.join(os.path.dirname(__file__), "models", "onnx"))
import export_models as m  # noqa: E402

dev = "cuda"


def bench(fn, *args, reps=200, warm=20):
    """Median wall time of one call with host-side synchronization, as
    fusec-bench times CompiledModel::run (minus its host copies)."""
    for _ in range(warm):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return times[len(times) // 2]


def main():
    # The modules make index tensors in forward (torch.arange): on the GPU.
    torch.set_default_device(dev)
    torch.manual_seed(0)
    models = {
        "mlp_block.onnx": (m.MlpBlock(), [torch.randn(16, m.D)]),
        "gpt2.onnx": (m.Gpt2(), [torch.randint(0, m.VOCAB, (1, m.SEQ))]),
        "bert.onnx": (m.BertLayer(), [torch.randn(2, 32, m.D)]),
        "llama.onnx": (m.LlamaBlock(), [torch.randn(1, m.SEQ, m.D)]),
    }
    for name, (module, inputs) in models.items():
        module = module.to(dev).eval()
        inputs = [t.to(dev) for t in inputs]
        with torch.no_grad():
            for peer, make in [
                ("torch_eager", lambda: module),
                ("torch_compile", lambda: torch.compile(module)),
                ("torch_compile_reduce_overhead",
                 lambda: torch.compile(module, mode="reduce-overhead")),
            ]:
                torch._dynamo.reset()
                start = time.perf_counter()
                fn = make()
                fn(*inputs)
                torch.cuda.synchronize()
                compile_ms = (time.perf_counter() - start) * 1e3
                us = bench(fn, *inputs)
                print(json.dumps({"case": "model:" + name, "peer": peer,
                                  "us": round(us, 1),
                                  "first_call_ms": round(compile_ms, 1)}),
                      flush=True)


if __name__ == "__main__":
    main()
