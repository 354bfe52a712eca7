#!/usr/bin/env bash
# Packs the binaries a quick GPU check needs (fusec, fusec-run, the unit tests,
# fusec-bench, capi-test, fusec-generate, stripped; libfusec.so and the libonnx copies their
# rpath finds; the Python package) into stage-pack/lean.tar.xz (git-ignored),
# small enough to `carry` beside the working tree (64 MiB in all); on the
# device: `tar -xJf stage-pack/lean.tar.xz -C /tmp` and run /tmp/lean/bin/*,
# or Python (the package, and pytest for its tests) with
#   FUSEC_LIBRARY=/tmp/lean/lib/libfusec.so PYTHONPATH=/tmp/lean/python
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
work=$(mktemp -d)
mkdir -p "$work/lean/bin" "$work/lean/lib" "$work/lean/python" stage-pack
for binary in build/tools/fusec build/tools/fusec-run build/test/fusec-unit-tests \
    build/bench/fusec-bench build/test/capi-test build/examples/fusec-generate; do
  strip -o "$work/lean/bin/$(basename "$binary")" "$binary"
done
# The binaries' rpath, $ORIGIN/../lib, finds libfusec.so and libonnx there.
strip -o "$work/lean/lib/libfusec.so.0" build/compiler/libfusec.so.0
ln -s libfusec.so.0 "$work/lean/lib/libfusec.so"
cp -r build/python/fusec "$work/lean/python/"
rm -f "$work/lean/python/fusec/libfusec.so" # FUSEC_LIBRARY names lib/'s
# pytest (pure Python, from PyPI) for the package's tests there: the GPU
# machines' Python has torch but may lack pytest, and reaches no index.
python3 -m pip install -q --disable-pip-version-check \
  --root-user-action=ignore --target "$work/lean/python" pytest
rm -rf "$work/lean/python/bin"
find "$work/lean/python" -name __pycache__ -prune -exec rm -rf {} +
cp -L /usr/lib/x86_64-linux-gnu/libonnx_proto.so.1 \
  /usr/lib/x86_64-linux-gnu/libonnx.so.1 "$work/lean/lib/"
tar -C "$work" -cf - lean | xz -T2 -6 > stage-pack/lean.tar.xz
rm -rf "$work"
ls -la stage-pack/lean.tar.xz
