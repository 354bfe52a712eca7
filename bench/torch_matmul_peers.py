"""PyTorch peers of fusec-bench's matmul and GEMV cases, on the same GPU and
in the same run (join by "case"). cuBLAS/cuBLASLt underneath; f32 without
TF32. Prints one JSON line per case: median time of CUDA-event timings,
TFLOP/s for matmuls, GB/s (each input read once, the output written once)
for GEMVs. Run by stage/run-gpu.sh on the GPU machine (needs torch)."""
import json

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


def bench(fn, *args, reps=30, warm=10):
    for _ in range(warm):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def linear_gelu(x, w, b):
    return F.gelu(x @ w + b, approximate="tanh")


def main():
    for name, m, n, k, dtype, epilogue in [
        ("matmul_f32_4096x4096x4096", 4096, 4096, 4096, torch.float32, False),
        ("matmul_bf16_8192x4096x4096", 8192, 4096, 4096, torch.bfloat16, False),
        ("matmul_bias_gelu_bf16_8192x4096x4096", 8192, 4096, 4096,
         torch.bfloat16, True),
    ]:
        x = torch.randn(m, k, device=dev, dtype=dtype)
        w = torch.randn(k, n, device=dev, dtype=dtype)
        b = torch.randn(n, device=dev, dtype=dtype)
        flops = 2.0 * m * n * k
        if not epilogue:
            us = bench(torch.matmul, x, w)
            print(json.dumps({"case": name, "peer": "torch_eager", "us": round(us, 1),
                              "TFLOPs": round(flops / us / 1e6, 1)}), flush=True)
            continue
        for peer, fn in [("torch_eager", linear_gelu),
                         ("torch_compile", torch.compile(linear_gelu))]:
            us = bench(fn, x, w, b)
            print(json.dumps({"case": name, "peer": peer, "us": round(us, 1),
                              "TFLOPs": round(flops / us / 1e6, 1)}), flush=True)
    k, n = 4096, 11008
    x = torch.randn(1, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    us = bench(F.linear, x, w, reps=200)
    moved = (x.numel() + w.numel() + n) * 2
    print(json.dumps({"case": "gemv_bf16_1x4096x11008", "peer": "torch_eager",
                      "us": round(us, 2), "GBps": round(moved / us / 1e3, 1)}),
          flush=True)


if __name__ == "__main__":
    main()
