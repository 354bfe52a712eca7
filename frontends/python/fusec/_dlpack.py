"""Tensors of any library through DLPack (`__dlpack__`/`__dlpack_device__`):
the address, dtype, shape and strides of an object, read from its capsule
without copying (https://dmlc.github.io/dlpack/latest/)."""

import ctypes

from . import _capi

# DLDeviceType
CPU, CUDA = 1, 2
# DLPack's stream argument for CUDA: the legacy default stream.
LEGACY_DEFAULT_STREAM = 1

# (DLDataTypeCode, bits) -> fusec's dtype name.
_DTYPES = {
    (2, 64): "f64", (2, 32): "f32", (2, 16): "f16", (4, 16): "bf16",
    (0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64",
    (1, 8): "u8", (1, 16): "u16", (1, 32): "u32", (1, 64): "u64",
    (6, 8): "i1",
}


def contiguous(shape, strides):
    """Whether DLPack `strides` (in elements; None: row-major) are the
    row-major ones, dims of size 1 aside."""
    if strides is None:
        return True
    expected = 1
    for dim, stride in reversed(list(zip(shape, strides))):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device),
                ("ndim", ctypes.c_int), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class View:
    """An object's tensor as DLPack describes it. Holds the capsule: the
    producer keeps the memory until the view is dropped."""

    def __init__(self, obj, stream):
        try:
            self.capsule = obj.__dlpack__(stream=stream)
        except TypeError:  # a producer from before the stream argument
            self.capsule = obj.__dlpack__()
        tensor = ctypes.cast(_get_pointer(self.capsule, b"dltensor"),
                             ctypes.POINTER(_ManagedTensor))[0].dl_tensor
        self.device = tensor.device.device_type
        self.device_id = tensor.device.device_id
        key = (tensor.dtype.code, tensor.dtype.bits)
        if key not in _DTYPES or tensor.dtype.lanes != 1:
            raise _capi.Error("fusec: error: DLPack dtype (code %d, %d bits, "
                              "%d lanes) is not one of fusec's" % (
                                  key + (tensor.dtype.lanes,)))
        self.dtype = _DTYPES[key]
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        self.strides = (None if not tensor.strides else
                        tuple(tensor.strides[i] for i in range(tensor.ndim)))
        self.data = (tensor.data or 0) + tensor.byte_offset
