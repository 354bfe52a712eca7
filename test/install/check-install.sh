#!/usr/bin/env bash
# Installs fusec's C API from BUILD into WORK/prefix, builds the consumer
# project beside this script against it (find_package(fusec)) and runs it.
#
#   check-install.sh BUILD WORK SEED_JSON CACHE_DIR
set -euo pipefail
build=$1 work=$2 seed=$3 cache=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" --component capi
test -f "$work/prefix/include/fusec/fusec.h"
cmake -S "$here" -B "$work/consumer" -G Ninja -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_PREFIX_PATH="$work/prefix"
cmake --build "$work/consumer"
FUSEC_CACHE_DIR=$cache "$work/consumer/consumer" "$seed"
