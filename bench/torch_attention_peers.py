"""PyTorch peers of fusec-bench's attention cases (bench/AttentionBench.cpp),
timed in the same device call: torch.nn.functional.scaled_dot_product_attention
on whatever backend torch picks ("default": cuDNN on an H100 with torch
2.11) and with FlashAttention-2 forced ("flash"), CUDA events around each
call, median of 20 after 5 warm-up calls. One JSON line per case, named as
fusec-bench names it, so the two join by "case":

  prefill: bf16 and f16, head dims 64 and 128, B x T = 16k tokens, 2048 /
           head dim heads, T in 512..16k, causal and not -> TFLOP/s
           (4 B H T^2 d, halved when causal)
  decode:  bf16, one query token, 32 query heads of 128 over 32 or 8 kv
           heads, batch 1 and 8, 1k..32k cached keys -> GB/s of the cache

    python3 torch_attention_peers.py [prefill|decode]...
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_us(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    times.sort()
    return times[len(times) // 2]


def timed(fn, backend):
    if backend is None:
        return median_us(fn)
    try:
        with sdpa_kernel(backend):
            return median_us(fn)
    except RuntimeError:
        return None


def prefill():
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        for d in (64, 128):
            for causal in (False, True):
                for t in (512, 1024, 2048, 4096, 8192, 16384):
                    b, h = 16384 // t, 2048 // d
                    q, k, v = (torch.randn(b, h, t, d, device="cuda",
                                           dtype=dtype) for _ in range(3))
                    flops = 4.0 * b * h * t * t * d * (0.5 if causal else 1)
                    row = {"case": f"attention_prefill_{name}_d{d}_T{t}" +
                           ("_causal" if causal else ""), "target": "cuda"}
                    for label, backend in (
                            ("default", None),
                            ("flash", SDPBackend.FLASH_ATTENTION)):
                        us = timed(lambda: F.scaled_dot_product_attention(
                            q, k, v, is_causal=causal), backend)
                        row[f"torch_{label}_us"] = us and round(us, 1)
                        row[f"torch_{label}_TFLOPs"] = (
                            us and round(flops / us / 1e6, 1))
                    print(json.dumps(row), flush=True)
                    del q, k, v


def decode():
    for kv_heads in (32, 8):
        for batch in (1, 8):
            for keys in (1024, 4096, 16384, 32768):
                q = torch.randn(batch, 32, 1, 128, device="cuda",
                                dtype=torch.bfloat16)
                k, v = (torch.randn(batch, kv_heads, keys, 128, device="cuda",
                                    dtype=torch.bfloat16) for _ in range(2))
                cache = 2.0 * batch * kv_heads * keys * 128 * 2
                us = median_us(lambda: F.scaled_dot_product_attention(
                    q, k, v, enable_gqa=kv_heads != 32))
                print(json.dumps({
                    "case": f"attention_decode_bf16_h32_kv{kv_heads}"
                            f"_b{batch}_L{keys}", "target": "cuda",
                    "torch_default_us": round(us, 1),
                    "torch_default_cache_GBps": round(cache / us / 1e3)}),
                    flush=True)


def main():
    parts = sys.argv[1:] or ["prefill", "decode"]
    torch.manual_seed(0)
    for part in parts:
        {"prefill": prefill, "decode": decode}[part]()


if __name__ == "__main__":
    main()
