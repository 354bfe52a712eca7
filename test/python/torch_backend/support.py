"""Devices and tolerances shared by the torch backend's tests."""
import pytest
import torch

import fusec.torch  # noqa: F401  (registers backend="fusec")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]

# Atol and rtol per dtype: fusec and torch round differently inside an op
# (fusec computes f16/bf16 in f32 and rounds once, as torch's CPU kernels
# mostly do); a few ulps of the dtype.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2,
             torch.float64: 1e-10}


def assert_close(actual, expected, dtype=None):
    dtype = dtype or expected.dtype
    tol = TOLERANCE.get(dtype, 0)
    torch.testing.assert_close(actual, expected, atol=tol, rtol=tol,
                               equal_nan=True)
