"""PyTorch peers of `fusec-bench --model=...` on the GPU machine: the same
modules as test/models/onnx/export_models.py (imported from it, from its
MODELS table: same classes and shapes; weights are random, which does not
change the timings), timed per call with eager execution, torch.compile and
torch.compile(mode="reduce-overhead"), each with its compile time. Join with
fusec-bench's output by "case".

    python3 torch_model_peers.py [DIR_WITH_export_models.py] [NAME ...]

The folder defaults to models/onnx next to this script (as staged), else
test/models/onnx of the checkout; NAMEs (e.g. gpt2 or gpt2_d256.onnx) pick
models, by default every model of MODELS.
"""
import json
import os
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
folder = args.pop(0) if args and os.path.isdir(args[0]) else next(
    (d for d in (os.path.join(here, "models", "onnx"),
                 os.path.join(here, "..", "test", "models", "onnx"))
     if os.path.isdir(d)), "")
sys.path.insert(0, folder)
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
    names = [os.path.basename(a).removesuffix(".onnx") for a in args]
    unknown = [n for n in names if n not in m.MODELS]
    if unknown:
        sys.exit(f"torch_model_peers.py: unknown model(s) {unknown}; "
                 f"known: {' '.join(m.MODELS)}")
    # The modules make index tensors in forward (torch.arange): on the GPU.
    torch.set_default_device(dev)
    torch.manual_seed(0)
    for name, (_, make_module, make_inputs, _) in m.MODELS.items():
        if names and name not in names:
            continue
        module = make_module().to(dev).eval()
        inputs = [t.to(dev) for t in make_inputs()]
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
                print(json.dumps({"case": "model:" + name + ".onnx",
                                  "peer": peer, "us": round(us, 1),
                                  "first_call_ms": round(compile_ms, 1)}),
                      flush=True)


if __name__ == "__main__":
    main()
