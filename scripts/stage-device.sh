#!/usr/bin/env bash
# Stages what a GPU machine without MLIR/LLVM needs into stage/ (git-ignored,
# carried to the device): the binaries, stripped (MLIR and LLVM are linked
# in statically), the example models and a script that runs the GPU tests,
# the benchmarks and the CLI there. The binaries need only libc, libstdc++
# and libgomp; libcuda and libnvrtc are dlopen'ed from the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
rm -rf stage
mkdir -p stage/bin stage/examples stage/models
for binary in build/tools/fusec build/tools/fusec-run \
    build/tools/fusec-onnx-conformance build/test/fusec-unit-tests \
    build/bench/fusec-bench; do
  strip -o "stage/bin/$(basename "$binary")" "$binary"
done
# The GPU machine has libprotobuf.so.32 but no libonnx: the binaries' rpath
# ($ORIGIN/../lib) finds these copies.
mkdir -p stage/lib
cp -L /usr/lib/x86_64-linux-gnu/libonnx_proto.so.1 \
  /usr/lib/x86_64-linux-gnu/libonnx.so.1 stage/lib/
# The ONNX node tests (27 MB), for the conformance run on the GPU: only on
# request (FUSEC_STAGE_ONNX_NODE=1), as they take half the 64 MiB carry.
if [ "${FUSEC_STAGE_ONNX_NODE:-0}" = 1 ] &&
  [ -d /usr/share/libonnx-testdata/data/node ]; then
  cp -r /usr/share/libonnx-testdata/data/node stage/onnx-node
fi
# ONNX 1.23's node tests that pass on the CPU (test/onnx/expected-pass-
# onnx-1.23.2.txt), for the same run on the GPU: on request,
# FUSEC_STAGE_ONNX_NEWEST=DIR where DIR was written by
# test/onnx/write_node_tests.py.
if [ -n "${FUSEC_STAGE_ONNX_NEWEST:-}" ]; then
  mkdir -p stage/onnx-node-newest
  grep '^node/' test/onnx/expected-pass-onnx-1.23.2.txt | cut -d/ -f2 |
    while read -r case; do
      cp -r "$FUSEC_STAGE_ONNX_NEWEST/node/$case" stage/onnx-node-newest/
    done
fi
# The CUDA kernel repros (docs/kernel-repros.md) of the ctest's models,
# built here (the GPU machine has no nvcc) for run-gpu.sh to run; only the
# binaries and the kernels they compile travel.
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc > /dev/null; then
  mapfile -t repro_models < test/repro/models.txt
  python3 test/repro/run-repros.py --fusec build/tools/fusec --target=cuda \
    --distinct=kind --build-only --work stage/repros-cuda "${repro_models[@]}"
  find stage/repros-cuda -name '*.repro.cu' -delete
fi
cp examples/*.json stage/examples/
cp test/models/*.json stage/models/
# The ONNX models travel with the checkout (the device gets the working
# tree too): run-gpu.sh links them rather than carrying them twice.
# The peers' script, when the shared folder is next to the checkout.
if [ -f ../shared/peers/torch_peers.py ]; then
  cp ../shared/peers/torch_peers.py stage/
fi
cp bench/torch_matmul_peers.py bench/torch_model_peers.py \
  bench/ort_model_peers.py bench/torch_cnn_peer.py stage/
# The ResNet-18 models of `fusec-bench --model=` (weights as inputs, a few
# KB each), where this machine's Python has onnx (FUSEC_STAGE_PYTHON picks
# another interpreter, e.g. a venv with the PyPI package).
python=${FUSEC_STAGE_PYTHON:-python3}
if "$python" -c 'import onnx' 2> /dev/null; then
  "$python" bench/make_cnn_model.py stage/resnet18.onnx
  "$python" bench/make_cnn_model.py stage/resnet18_b8.onnx --batch 8
fi
cat > stage/run-gpu.sh <<'SCRIPT'
#!/usr/bin/env bash
# On the GPU machine: GPU tests, the CLI on the example, benchmarks.
set -uo pipefail
cd "$(dirname "$0")"
[ -e models/onnx ] || ln -s ../../test/models/onnx models/onnx
export FUSEC_CACHE_DIR=$PWD/cache FUSEC_TEST_CACHE_DIR=$PWD/test-cache
out=${OUT:-$PWD/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== fusec on the example"
bin/fusec examples/seed.json --emit=source | head -5
bin/fusec examples/seed.json --run --check
echo "== fusec --check on the test models (GPU against unfused CPU)"
for model in models/*.json; do
  echo "-- $model"
  bin/fusec "$model" --run --check 2>&1 | grep -E "^check|error"
done
echo "== CUDA kernel repros (built by stage-device.sh)"
if [ -f repros-cuda/built.txt ]; then
  python3 ../test/repro/run-repros.py --run-built --work repros-cuda 2>&1 |
    tee "$out/repros-cuda.log" | tail -3
fi
echo "== GPU tests"
bin/fusec-unit-tests "[gpu]" --use-colour no 2>&1 | tee "$out/gpu-tests.log" | tail -25
echo "== ONNX conformance (node tests) on the GPU"
if [ -d onnx-node ]; then
  bin/fusec-onnx-conformance --target=cuda --data=onnx-node 2>&1 |
    tee "$out/onnx-conformance-cuda.txt" | tail -1
fi
if [ -d onnx-node-newest ]; then
  bin/fusec-onnx-conformance --target=cuda --data=onnx-node-newest 2>&1 |
    tee "$out/onnx-conformance-newest-cuda.txt" | tail -1
fi
echo "== benchmarks"
bin/fusec-bench --target=cuda 2>&1 | tee "$out/bench-cuda.jsonl"
echo "== whole models: fusec, PyTorch on the same GPU, ONNX Runtime on the CPU"
models="mlp_block gpt2 bert llama gpt2_d256 llama_d256 bert_d128"
bin/fusec-bench --target=cuda $(printf -- '--model=models/onnx/%s.onnx ' $models) \
  2>&1 | tee "$out/bench-models.jsonl"
bin/fusec-bench --target=cpu $(printf -- '--model=models/onnx/%s.onnx ' $models) \
  2>&1 | tee "$out/bench-models-cpu.jsonl"
python3 torch_model_peers.py $models 2>&1 | tee "$out/torch-model-peers.jsonl"
python3 ort_model_peers.py $models 2>&1 | tee "$out/ort-model-peers.jsonl"
echo "== packages (docs/packages.md): compile vs load on the GPU"
bin/fusec-bench --target=cuda \
  $(printf -- '--package=models/onnx/%s.onnx ' gpt2 gpt2_d256 llama_d256 bert_d128) \
  2>&1 | tee "$out/bench-packages-cuda.jsonl"
bin/fusec models/layernorm_gelu.json --target=cuda --emit=package -o "$out/ln.fusec"
bin/fusec models/layernorm_gelu.json --target=cuda --run --seed=5 | grep '^output'
bin/fusec-run "$out/ln.fusec" --seed 5 --time
echo "== PyTorch matmul peers (same GPU)"
python3 torch_matmul_peers.py 2>&1 | tee "$out/torch-matmul-peers.jsonl"
SCRIPT
chmod +x stage/run-gpu.sh
du -sh stage
for binary in stage/bin/*; do
  echo "$binary needs: $(ldd "$binary" | awk '{print $1}' | tr '\n' ' ')"
done
