#!/usr/bin/env bash
# The main job: build, then compile the bundled sin⁴·y + sin⁴ model, print its
# fused kernel, run it, and check it against unfused execution.
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
