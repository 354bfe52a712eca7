"""CPU peers of fusec-bench's attention_cpu_* cases (bench/AttentionBench.cpp):
torch.nn.functional.scaled_dot_product_attention on the host's CPU, f32,
[1, 12, T, 64] q, k and v, causal and not, with torch's default thread
count (all cores). One JSON line per case, named as fusec-bench names them,
so the two join by "case".

    python3 torch_attention_cpu_peers.py [--threads=N]
"""
import json
import sys
import time

import torch
import torch.nn.functional as F


def median_us(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    times.sort()
    return times[len(times) // 2]


def main():
    for arg in sys.argv[1:]:
        if arg.startswith("--threads="):
            torch.set_num_threads(int(arg.split("=", 1)[1]))
        else:
            sys.exit(__doc__)
    torch.manual_seed(0)
    heads, dim = 12, 64
    for t in (512, 2048):
        for causal in (False, True):
            q, k, v = (torch.rand(1, heads, t, dim) * 2 - 1 for _ in range(3))
            with torch.no_grad():
                us = median_us(lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal))
            flops = 4.0 * heads * t * t * dim * (0.5 if causal else 1.0)
            print(json.dumps({
                "case": f"attention_cpu_f32_d64_T{t}" +
                        ("_causal" if causal else ""),
                "target": "cpu", "torch_sdpa_us": round(us, 1),
                "torch_sdpa_TFLOPs": round(flops / us / 1e6, 4),
                "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
