"""Shared pieces of the torch backend's tests: the devices to run on (CUDA
cases skip without a GPU), per-dtype tolerances, and `compiled`, which
compiles a function with backend="fusec" and checks that fusec ran it."""
import logging
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import fusec.torch  # noqa: E402,F401  (registers backend="fusec")

# test/models/onnx/export_models.py defines the small transformer modules.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "models", "onnx"))

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]

# Atol and rtol per dtype: fusec and torch round differently inside an op
# (fusec computes f16/bf16 in f32 and rounds once, as torch's CPU kernels
# mostly do); a few ulps of the dtype.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2,
             torch.float64: 1e-10}


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def assert_close(actual, expected, dtype=None):
    dtype = dtype or expected.dtype
    tol = TOLERANCE.get(dtype, 0)
    torch.testing.assert_close(actual, expected, atol=tol, rtol=tol,
                               equal_nan=True)


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
    caplog.set_level(logging.INFO, logger="fusec.torch")

    def run(fn, *args, **kwargs):
        torch._dynamo.reset()
        caplog.clear()
        result = torch.compile(fn, backend="fusec", **kwargs)(*args)
        return result, FusecRun(list(caplog.records))

    return run
