#!/usr/bin/env python3
"""The Python call's overhead on a tiny graph (issue #32's target: within
2 us of C++'s CompiledModel::runOnDevice): `sin4` on f32[2, 3] (fusec-bench's
sin4_f32_2x3) through fusec.Model.__call__ on torch CUDA tensors, against
fusec-bench's device-resident figures for the same graph. Prints one JSON
object. Needs a GPU, torch with CUDA, and the build's python package:

    PYTHONPATH=build/python python3 bench/python_overhead.py \\
        --fusec-bench build/bench/fusec-bench [--reps 2000]

Figures (us per call, medians over batches):
  python_sync_us        model(x, y, out=[z]) then torch.cuda.synchronize()
  cpp_sync_us           fusec-bench's device_resident_run_us (runOnDevice)
  python_queued_us      model(x, y, out=[z]) 100 times, one synchronize
  cpp_queued_us         fusec-bench's device_resident_queued_run_us
  python_queued_alloc_us  the same with fresh outputs (torch.empty per call)
  python_call_only_us   the host time of one queued call (the launch path)
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

import fusec


def sin4_model():
    g = fusec.Graph("sin4")
    v = g.input("x", "f32", (2, 3))
    for _ in range(4):
        v = g.op("sin", [v])
    g.output(v)
    return fusec.compile(g, target="cuda")


def median_us(reps, body, per=1):
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        body()
        samples.append((time.perf_counter() - start) * 1e6 / per)
    return statistics.median(samples)


def cpp_figures(fusec_bench, reps):
    output = subprocess.run(
        [fusec_bench, "--target=cuda", "--case=sin4_f32_2x3",
         "--reps=%d" % reps], check=True, capture_output=True,
        text=True).stdout
    for line in output.splitlines():
        if line.startswith("{") and '"sin4_f32_2x3"' in line:
            return json.loads(line)
    raise SystemExit("fusec-bench printed no sin4_f32_2x3 case:\n" + output)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fusec-bench", required=True)
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    import torch

    if not (fusec.cuda_available() and torch.cuda.is_available()):
        print(json.dumps({"case": "python_overhead", "skipped": "no GPU"}))
        return 0
    model = sin4_model()
    x = torch.randn(2, 3, device="cuda")
    z = torch.empty(2, 3, device="cuda")
    out = [z]
    (check,) = model(x)
    torch.testing.assert_close(check, torch.sin(torch.sin(torch.sin(
        torch.sin(x)))), rtol=1e-5, atol=1e-5)
    for _ in range(200):  # warm up: the graph captured, the caches hot
        model(x, out=out)
    torch.cuda.synchronize()
    sync = torch.cuda.synchronize

    def synchronous():
        model(x, out=out)
        sync()

    queued_count = 100

    def queued():
        for _ in range(queued_count):
            model(x, out=out)
        sync()

    def queued_alloc():
        for _ in range(queued_count):
            model(x)
        sync()

    batches = max(args.reps // queued_count, 20)
    result = {
        "case": "python_overhead",
        "graph": "sin4_f32_2x3",
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "python_sync_us": median_us(args.reps, synchronous),
        "python_queued_us": median_us(batches, queued, queued_count),
        "python_queued_alloc_us": median_us(batches, queued_alloc,
                                            queued_count),
    }
    call_samples = []
    for _ in range(args.reps):
        start = time.perf_counter()
        model(x, out=out)
        call_samples.append((time.perf_counter() - start) * 1e6)
        sync()
    result["python_call_only_us"] = statistics.median(call_samples)
    cpp = cpp_figures(args.fusec_bench, args.reps)
    result["cpp_sync_us"] = cpp["device_resident_run_us"]
    result["cpp_queued_us"] = cpp["device_resident_queued_run_us"]
    result["sync_overhead_us"] = result["python_sync_us"] - result[
        "cpp_sync_us"]
    result["queued_overhead_us"] = result["python_queued_us"] - result[
        "cpp_queued_us"]
    result["within_2us"] = result["sync_overhead_us"] <= 2.0
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                      for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
