"""fusec as a torch.compile backend:

    import fusec.torch  # or, installed: the torch_dynamo_backends entry point
    compiled = torch.compile(model, backend="fusec")

Ops fusec cannot lower run in eager PyTorch and are logged under the logger
"fusec.torch" (FUSEC_LOGS=+fallback shows every detail). See
docs/torch-backend.md.
"""
import torch
from torch._dynamo.backends import registry as _registry

from ._backend import backend
from ._log import configure_from_env

__all__ = ["backend"]

configure_from_env()

# Registered here so that `import fusec.torch` works from the build tree.
# Where the installed package's entry point is known to dynamo, dynamo
# registers it when first asked for "fusec" (doing it here as well would
# be a duplicate name).
if ("fusec" not in _registry._COMPILER_FNS
        and _registry._BACKENDS.get("fusec") is None):
    torch._dynamo.register_backend(backend, name="fusec")
