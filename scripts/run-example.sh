#!/usr/bin/env bash
# The main job: build, then compile the bundled sin⁴·y + sin⁴ model, print its
# fused kernel, run it, and check it against unfused execution; then the
# GPT-2-style ONNX model of test/models/onnx, against PyTorch's output, and
# greedy generation with a KV cache (examples/generate).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
model=${1:-examples/seed.json}
echo "== fusec $model: kernels"
build/tools/fusec "$model"
echo "== generated source"
build/tools/fusec "$model" --emit=source
echo "== run and check against unfused execution"
build/tools/fusec "$model" --run --check
if [ $# -eq 0 ]; then
  # A real model: a 2-layer GPT-2-style LM exported from PyTorch, checked
  # against PyTorch's own output.
  gpt2=test/models/onnx/gpt2
  echo "== fusec $gpt2.onnx: kernels and library calls"
  build/tools/fusec "$gpt2.onnx"
  echo "== run it and compare with PyTorch's output"
  build/tools/fusec "$gpt2.onnx" --run --inputs "${gpt2}_input_0.pb" \
    --expect "${gpt2}_output_0.pb" --atol 1e-4
  # Text generation with a KV cache through the C++ API: a 2-layer
  # GPT-2-style decoder step (examples/generate/export_decoder.py), its
  # prefill compiled once for every prompt length (--symbolic) and its
  # decode step for one token, each step's logits checked against
  # PyTorch's, then 24 tokens generated.
  echo "== greedy generation with a KV cache (examples/generate)"
  build/examples/fusec-generate test/models/generate --tokens 24 --symbolic
fi
