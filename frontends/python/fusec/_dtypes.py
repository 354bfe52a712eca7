"""Dtypes: fusec's names ("f32", "bf16", "i1", ...), their C API codes, and
the NumPy and torch dtypes that match them. torch is never imported here:
a torch dtype is recognized by its type's module."""

import ctypes

import numpy as np

from . import _capi

# NumPy dtype names (and torch's, without "torch.") of fusec's dtypes.
_FOREIGN_NAMES = {
    "float64": "f64", "double": "f64",
    "float32": "f32", "float": "f32",
    "float16": "f16", "half": "f16",
    "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "short": "i16",
    "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "i1",
    "float8_e4m3fn": "f8E4M3FN", "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2": "f8E5M2", "float8_e5m2fnuz": "f8E5M2FNUZ",
    "float8_e8m0fnu": "f8E8M0FNU", "float4_e2m1fn": "f4E2M1FN",
    "int4": "i4", "uint4": "u4", "int2": "i2", "uint2": "u2",
}

# fusec's name -> the NumPy dtype its data travels as: bf16 and the narrow
# floats as their raw bits (ml_dtypes' types are accepted on input too).
_NUMPY = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16,
    "bf16": np.uint16, "i8": np.int8, "i16": np.int16, "i32": np.int32,
    "i64": np.int64, "i1": np.bool_, "u8": np.uint8, "u16": np.uint16,
    "u32": np.uint32, "u64": np.uint64, "i4": np.int8, "i2": np.int8,
    "u4": np.uint8, "u2": np.uint8,
}


def name_of(dtype):
    """fusec's name of `dtype`: a fusec name, a NumPy dtype (or its name or
    type), an ml_dtypes type or a torch dtype."""
    if isinstance(dtype, str):
        text = dtype
    elif type(dtype).__module__ == "torch":  # torch.float32, ...
        text = str(dtype).replace("torch.", "")
    else:
        try:
            text = np.dtype(dtype).name
        except TypeError:
            raise _capi.Error("fusec: error: %r is not a dtype" % (dtype,))
    code = ctypes.c_int()
    if _capi.lib.fusec_dtype_from_name(_capi.encode(text),
                                       ctypes.byref(code)) == _capi.OK:
        return text if text != "bool" else "i1"
    if text in _FOREIGN_NAMES:
        return _FOREIGN_NAMES[text]
    raise _capi.Error("fusec: error: unknown dtype %r" % (dtype,))


def code_of(dtype):
    """The C API's fusec_dtype of `dtype` (anything name_of takes)."""
    code = ctypes.c_int()
    _capi.check(_capi.lib.fusec_dtype_from_name(
        _capi.encode(name_of(dtype)), ctypes.byref(code)))
    return code.value


def name_of_code(code):
    return _capi.decode(_capi.lib.fusec_dtype_name(code))


def numpy_dtype(name):
    """The NumPy dtype fusec's dtype `name` travels as: its own, or its raw
    bits (bf16 as uint16, float8 as uint8)."""
    if name in _NUMPY:
        return np.dtype(_NUMPY[name])
    return np.dtype(np.uint8)  # the float8/float4 dtypes, one per byte


def accepts_numpy(name, dtype):
    """Whether a NumPy array of `dtype` holds fusec dtype `name`'s data:
    its own dtype, its raw-bits dtype, or ml_dtypes' type of that name."""
    return dtype == numpy_dtype(name) or (
        dtype.itemsize == numpy_dtype(name).itemsize
        and _FOREIGN_NAMES.get(dtype.name) == name)


def torch_dtype(name):
    import torch  # only reached with torch tensors: torch is loaded

    for candidate, fusec_name in _FOREIGN_NAMES.items():
        if fusec_name == name and isinstance(getattr(torch, candidate, None),
                                             torch.dtype):
            return getattr(torch, candidate)
    raise _capi.Error("fusec: error: torch has no dtype for fusec's %s" % name)
