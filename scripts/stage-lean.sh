#!/usr/bin/env bash
# Packs the binaries a quick GPU check needs (fusec, the unit tests,
# fusec-bench, stripped, and the libonnx copies their rpath finds) into
# stage-pack/lean.tar.xz (git-ignored), small enough to `carry` beside the
# working tree (64 MiB in all); on the device: `tar -xJf
# stage-pack/lean.tar.xz -C /tmp` and run /tmp/lean/bin/*.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
work=$(mktemp -d)
mkdir -p "$work/lean/bin" "$work/lean/lib" stage-pack
for binary in build/tools/fusec build/test/fusec-unit-tests \
    build/bench/fusec-bench; do
  strip -o "$work/lean/bin/$(basename "$binary")" "$binary"
done
cp -L /usr/lib/x86_64-linux-gnu/libonnx_proto.so.1 \
  /usr/lib/x86_64-linux-gnu/libonnx.so.1 "$work/lean/lib/"
tar -C "$work" -cf - lean | xz -T2 -6 > stage-pack/lean.tar.xz
rm -rf "$work"
ls -la stage-pack/lean.tar.xz
