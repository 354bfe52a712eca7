#!/usr/bin/env bash
# Every test: build, then lit + FileCheck and the Catch2 unit tests, via ctest.
# GPU-labelled tests skip themselves on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
