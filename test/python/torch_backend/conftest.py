"""The torch backend's tests need torch (scripts/install-torch.sh makes an
environment with it). Without torch, as under the package's own pytest
run, they are not collected. The folder is not called `torch`: pytest puts
test folders on sys.path, where a `torch` folder would shadow the package.
"""
import importlib.util
import logging
import os
import sys

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if not HAVE_TORCH:
    collect_ignore_glob = ["test_*.py"]

# test/models/onnx/export_models.py defines the small transformer modules.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "models", "onnx"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    if not HAVE_TORCH:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class FusecRun:
    """What the backend logged while compiling: how many ops fusec
    compiled, and the fallback warnings."""

    def __init__(self, records):
        self.records = records

    @property
    def compiled_ops(self):
        return sum(int(r.getMessage().split(": ")[1].split()[0])
                   for r in self.records if "compiled by fusec" in
                   r.getMessage())

    @property
    def fallbacks(self):
        return [r.getMessage() for r in self.records
                if r.levelno >= logging.WARNING]


@pytest.fixture
def compiled(caplog):
    """compiled(fn, *args, **compile_kwargs) -> (result, FusecRun)."""
    import torch

    import fusec.torch  # noqa: F401  (registers backend="fusec")

    caplog.set_level(logging.INFO, logger="fusec.torch")

    def run(fn, *args, **kwargs):
        torch._dynamo.reset()
        caplog.clear()
        result = torch.compile(fn, backend="fusec", **kwargs)(*args)
        return result, FusecRun(list(caplog.records))

    return run
