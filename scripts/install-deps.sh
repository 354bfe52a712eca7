#!/usr/bin/env bash
# Installs, from Debian's packages, whatever fusec needs that is missing.
#   scripts/install-deps.sh [--fuzz]
# --fuzz adds clang 22 and its libFuzzer/ASan/UBSan runtimes, which only the
# fuzz harnesses need (scripts/fuzz.sh).
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ lld-22 clang-format
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  catch2 nlohmann-json3-dev
  libopenblas0 # matmuls on the CPU (dlopen'ed: the runtime library only)
  libonnx-dev libprotobuf-dev # reading .onnx models
  libonnx-testdata # the ONNX backend test cases the conformance tests run
  python3-venv # pip's onnx, whose newer node tests the conformance tests run
  python3-matplotlib # tools/plot-profile.py (roofline charts)
)
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang-22 libclang-rt-22-dev)
fi
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "fusec: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
