"""fusec: a graph-mode fusion compiler, from Python (docs/python.md).

    import fusec
    model = fusec.compile("model.onnx")        # or a ModelProto, a Graph
    outputs = model(x, y)                      # NumPy arrays or torch tensors

Over libfusec.so's C API through ctypes; torch is imported only when torch
tensors are passed (and by fusec.torch, the torch.compile backend).
"""

from ._capi import Error, lib as _lib
from ._graph import Graph
from ._model import Kernel, Model, TensorSpec, compile, compile_text, load

__all__ = ["Error", "Graph", "Kernel", "Model", "TensorSpec", "compile",
           "compile_text", "load", "cache_dir", "clear_cache",
           "cuda_available", "version"]

__version__ = _lib.fusec_version().decode()


def version():
    """The version of libfusec.so."""
    return _lib.fusec_version().decode()


def cuda_available():
    """Whether a usable GPU is present (the cuda target can run here)."""
    return bool(_lib.fusec_cuda_available())


def cache_dir(dir=None):
    """The kernel cache directory `dir` names; None: the default
    ($FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec, else ~/.cache/fusec)."""
    import ctypes

    from ._capi import check, decode, encode

    length = ctypes.c_size_t()
    check(_lib.fusec_cache_directory(encode(dir), None, 0,
                                     ctypes.byref(length)))
    buffer = ctypes.create_string_buffer(length.value + 1)
    check(_lib.fusec_cache_directory(encode(dir), buffer, len(buffer), None))
    return decode(buffer.value)


def clear_cache(dir=None):
    """Removes every entry of the kernel cache in `dir` (None: default)."""
    from ._capi import check, encode

    check(_lib.fusec_cache_clear(encode(dir)))
