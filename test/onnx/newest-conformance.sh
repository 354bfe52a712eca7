#!/usr/bin/env bash
# ONNX 1.23's node tests (opsets up to 28) through fusec-onnx-conformance,
# against the committed list of cases that pass. Debian's libonnx-testdata
# stops at ONNX 1.12; pip's onnx writes its newer tests
# (write_node_tests.py), in a virtual environment under the build folder.
#   newest-conformance.sh CONFORMANCE_BINARY SOURCE_DIR WORK_DIR CACHE_DIR
set -euo pipefail
conformance=$1 source_dir=$2 work=$3 cache=$4
onnx_version=1.23.2
venv=$work/onnx-$onnx_version-venv
data=$work/onnx-$onnx_version-node-tests
if ! "$venv/bin/python" -c "import onnx, sys
sys.exit(onnx.__version__ != '$onnx_version')" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "onnx==$onnx_version"
fi
if [ ! -f "$data/written" ]; then
  rm -rf "$data"
  "$venv/bin/python" "$source_dir/test/onnx/write_node_tests.py" "$data"
  touch "$data/written"
fi
exec "$conformance" --target=cpu --data="$data/node" \
  --expect="$source_dir/test/onnx/expected-pass-onnx-$onnx_version.txt" \
  --cache-dir="$cache"
