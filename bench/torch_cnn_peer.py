"""PyTorch peer of `fusec-bench --model=resnet18.onnx` (bench/make_cnn_model.py):
the same ResNet-18 topology in eval mode (BatchNormalization as its own
op, random weights, f32, TF32 off), timed per call on the GPU with CUDA
events (median of --reps after warm-up), eager and torch.compile. Prints
one JSON object per batch size with the case names fusec-bench uses.

    python3 torch_cnn_peer.py [--reps N] [--batch B]...
"""
import argparse
import json
import time

import torch
from torch import nn

from torch_matmul_peers import bench  # CUDA events around each call, median

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                               nn.BatchNorm2d(cout), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                               nn.BatchNorm2d(cout))
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride,
                                                bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        shortcut = x if self.down is None else self.down(x)
        return torch.relu(self.b(self.a(x)) + shortcut)


def resnet18(width=64):
    layers = [nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
              nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    channels = width
    for stage in range(4):
        for block in range(2):
            layers.append(BasicBlock(channels, width << stage,
                                     2 if stage > 0 and block == 0 else 1))
            channels = width << stage
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 1000)]
    return nn.Sequential(*layers)


parser = argparse.ArgumentParser()
parser.add_argument("--reps", type=int, default=100)
parser.add_argument("--batch", type=int, action="append")
args = parser.parse_args()
model = resnet18().cuda().eval()
with torch.no_grad():
    for batch in args.batch or [1, 8]:
        x = torch.randn(batch, 3, 224, 224, device="cuda")
        eager = bench(model, x, reps=args.reps)
        start = time.time()
        compiled = torch.compile(model)
        compiled(x)
        compile_s = time.time() - start
        result = {"case": "model:resnet18" + ("" if batch == 1 else
                                              f"_b{batch}") + ".onnx",
                  "peer": "torch", "eager_us": round(eager, 1),
                  "compile_us": round(bench(compiled, x, reps=args.reps), 1),
                  "compile_s": round(compile_s, 1)}
        print(json.dumps(result), flush=True)
