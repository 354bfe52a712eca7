"""Greedy generation with transformers' own decoder-step exports, whose
key/value caches grow by concatenation (test/models/onnx/
export_hf_cache_models.py): one compile with batch, seq and past symbolic
runs the prompt on empty caches (past = 0) and then one token at a time,
each step's presents fed back as the next step's pasts (past + 1 each
step). Every call's last-position logits and greedy token are checked
against PyTorch's generation through the same module: NumPy arrays on the
CPU, and torch CUDA tensors on the GPU (skipped without one). Run by
ctest's `python` test (PYTHONPATH=build/python)."""

import os

import numpy as np
import pytest

import fusec

SOURCE_DIR = os.environ.get(
    "FUSEC_TEST_SOURCE_DIR",
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
MODELS = os.path.join(SOURCE_DIR, "test", "models", "onnx")


def numpy_arrays():
    return "cpu", lambda array: array, lambda array: array


def torch_cuda_tensors():
    """CUDA tensors in and out: the caches stay on the device, each step's
    presents passed as the next step's pasts without copies."""
    torch = pytest.importorskip("torch")
    if not (fusec.cuda_available() and torch.cuda.is_available()):
        pytest.skip("needs a GPU usable by fusec and torch")
    return ("cuda", lambda array: torch.from_numpy(array).cuda(),
            lambda tensor: tensor.cpu().numpy())


@pytest.mark.parametrize("tensors", [numpy_arrays, torch_cuda_tensors])
@pytest.mark.parametrize("name, kv_heads", [("gpt2", 4), ("llama", 2)])
def test_generation_through_a_growing_cache(name, kv_heads, tensors):
    target, to_tensor, to_numpy = tensors()

    def reference(part):
        return np.load(os.path.join(MODELS, f"hf_{name}_cache_gen_{part}.npy"))

    prompt, tokens, logits = (reference("prompt"), reference("tokens"),
                              reference("logits"))
    model = fusec.compile(os.path.join(MODELS, f"hf_{name}_cache.onnx"),
                          target=target,
                          dims={"batch": (1, 4), "seq": (1, 16),
                                "past": (0, 64)})
    caches = [to_tensor(np.zeros((1, kv_heads, 0, 16), np.float32))
              for _ in range(4)]
    ids = to_tensor(prompt)
    for step in range(len(tokens)):
        outputs = model(ids, *caches)
        last = to_numpy(outputs[0])[0, -1]
        # f32 through different kernels: relative L2 error, and the token.
        error = (np.linalg.norm(last - logits[step])
                 / np.linalg.norm(logits[step]))
        assert error < 1e-5, f"step {step}: relative L2 error {error}"
        assert int(last.argmax()) == tokens[step], f"step {step}"
        past = prompt.shape[1] + step
        assert ([tuple(c.shape) for c in outputs[1:]]
                == [(1, kv_heads, past, 16)] * 4)
        ids = to_tensor(np.array([[tokens[step]]], np.int64))
        caches = outputs[1:]
