#!/usr/bin/env bash
# Every test: build, then lit + FileCheck and the Catch2 unit tests, via ctest.
# GPU-labelled tests skip themselves on machines without a GPU.
#
#   scripts/run-tests.sh [--sanitize] [CTEST ARGS...]
#
# --sanitize builds everything with ASan + UBSan into build-asan/ (gcc, the
# project's compiler: see docs/fuzzing.md) and runs the same suite there;
# any sanitizer report fails the test that triggered it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  scripts/install-deps.sh
  if [ ! -f build-asan/build.ninja ]; then
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DFUSEC_SANITIZE=ON
  fi
  cmake --build build-asan
  # detect_leaks: a leak fails the process that leaked. The host compiler
  # and other programs the tests start are not instrumented.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  if [ -x /usr/lib/llvm-22/bin/llvm-symbolizer ]; then
    export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
  fi
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" "$@"
  exit
fi
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
