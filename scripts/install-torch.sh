#!/usr/bin/env bash
# Installs PyPI's torch (with numpy, pytest and onnx, whose test models
# test/models/onnx/export_models.py defines) into a virtual environment
# for fusec's torch.compile backend and its tests (test/python/torch_backend/):
#   scripts/install-torch.sh              install; print the environment's python
#   scripts/install-torch.sh --run ARGS   then run `python ARGS` there, e.g.
#     PYTHONPATH=build/python scripts/install-torch.sh --run \
#       -m pytest -q test/python/torch_backend
# Fast when present (the installed versions are read, torch is not imported).
#
# The environment is $FUSEC_TORCH_VENV, else ~/.cache/fusec/torch-venv
# ($XDG_CACHE_HOME is honoured), outside the build folder so that a fresh
# build or another worktree does not download it again. $FUSEC_TORCH_VERSION
# picks another torch (default below).
#
# Why the whole CUDA wheel set even on machines without a GPU: PyPI's only
# Linux x86_64 torch wheel links its CUDA libraries at load time
# (libtorch_cuda.so needs libcudart, cuBLAS, cuDNN, NCCL, cuFile, ...), so
# `pip install --no-deps torch` fails at `import torch` (libcufile.so.0
# missing); the CPU-only wheels are not on PyPI. The set is about 3.0 GB
# downloaded, 5.3 GB installed, under 3 minutes here (docs/torch-backend.md).
set -euo pipefail
torch_version=${FUSEC_TORCH_VERSION:-2.15.0}
venv=${FUSEC_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/fusec/torch-venv}
python=$venv/bin/python

installed() {
  "$python" - "$torch_version" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
torch = version("torch").split("+")[0]
version("numpy"), version("pytest"), version("onnx")
sys.exit(torch != sys.argv[1])
EOF
}

if ! installed; then
  echo "fusec: installing torch $torch_version, numpy, pytest and onnx into $venv" >&2
  if [ ! -x "$python" ]; then
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
  fi
  "$python" -m pip install -q --disable-pip-version-check \
    "torch==$torch_version" numpy pytest onnx >&2
fi
if [ "${1:-}" = "--run" ]; then
  shift
  exec "$python" "$@"
fi
echo "$python"
