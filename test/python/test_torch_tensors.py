"""torch tensors through fusec models: CPU tensors where torch is installed,
and on the GPU machine CUDA tensors passed by address with no host copies,
ordered with torch's current stream. Skipped where torch (or a GPU) is
missing; the lead runs the GPU cases on the device:

    PYTHONPATH=build/python python3 -m pytest -q test/python/test_torch_tensors.py
"""

import os

import numpy as np
import pytest

import fusec

torch = pytest.importorskip("torch")

SEED = os.path.join(os.environ.get(
    "FUSEC_TEST_SOURCE_DIR",
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)),
    "examples", "seed.json")

needs_gpu = pytest.mark.skipif(
    not (fusec.cuda_available() and torch.cuda.is_available()),
    reason="needs a GPU usable by fusec and torch")


def seed_reference(x, y):
    s = torch.sin(torch.sin(torch.sin(torch.sin(x.double()))))
    return (s * y.double() + s).float()


def binary_model(dtype, op, shape, target):
    g = fusec.Graph("%s_%s" % (op, str(dtype).replace("torch.", "")))
    g.output(g.op(op, [g.input("a", dtype, shape), g.input("b", dtype, shape)]))
    return fusec.compile(g, target=target)


def test_cpu_tensors():
    model = fusec.compile(SEED, target="cpu")
    x = torch.linspace(-1, 1, 6).reshape(2, 3)
    y = torch.linspace(2, -1, 6).reshape(2, 3)
    (z,) = model(x, y)
    assert isinstance(z, torch.Tensor) and z.device.type == "cpu"
    torch.testing.assert_close(z, seed_reference(x, y), rtol=1e-5, atol=1e-6)
    (z,) = model(x.t().contiguous().t(), y)  # read through one copy
    torch.testing.assert_close(z, seed_reference(x, y), rtol=1e-5, atol=1e-6)
    out = torch.empty(2, 3)
    assert model(x, y, out=[out])[0] is out
    with pytest.raises(fusec.Error, match="input 'y' is f32\\[2, 3\\] but "
                       "the tensor given is f64\\[2, 3\\]"):
        model(x, y.double())


def test_cpu_bf16_tensors():
    model = binary_model(torch.bfloat16, "mul", (4,), "cpu")
    a = torch.tensor([1.5, -2.0, 3.25, 0.5], dtype=torch.bfloat16)
    b = torch.tensor([2.0, 0.5, -1.0, 8.0], dtype=torch.bfloat16)
    (c,) = model(a, b)
    assert c.dtype == torch.bfloat16
    torch.testing.assert_close(c, a * b)


@needs_gpu
def test_cuda_tensors_in_and_out_without_copies():
    model = fusec.compile(SEED, target="cuda")
    assert model.target == "cuda"
    x = torch.randn(2, 3, device="cuda")
    y = torch.randn(2, 3, device="cuda")
    out = torch.empty(2, 3, device="cuda")
    (z,) = model(x, y, out=[out])
    assert z is out and z.data_ptr() == out.data_ptr()
    torch.testing.assert_close(z, seed_reference(x, y), rtol=1e-5, atol=1e-5)
    (fresh,) = model(x, y)
    assert fresh.device.type == "cuda" and fresh.dtype == torch.float32
    torch.testing.assert_close(fresh, z)
    # New addresses each call (a CUDA graph per binding, then replays).
    for _ in range(10):
        a, b = torch.randn(2, 3, device="cuda"), torch.randn(2, 3,
                                                            device="cuda")
        (c,) = model(a, b)
        torch.testing.assert_close(c, seed_reference(a, b), rtol=1e-5,
                                   atol=1e-5)


@needs_gpu
@pytest.mark.parametrize("on_side_stream", [False, True])
def test_cuda_stream_ordering(on_side_stream):
    """The inputs are written late on the current stream (after a sleep
    kernel) and the output read on it right after the call: correct only
    if fusec's run waits for the stream and the stream for the run."""
    model = binary_model(torch.float32, "add", (1 << 20,), "cuda")
    stream = torch.cuda.Stream() if on_side_stream else \
        torch.cuda.current_stream()
    a = torch.zeros(1 << 20, device="cuda")
    b = torch.zeros(1 << 20, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        for step in range(1, 4):
            torch.cuda._sleep(5_000_000)  # ~ms: the run must wait for it
            a.fill_(step)
            b.fill_(10 * step)
            (c,) = model(a, b)
            d = c * 2  # on the stream, after the run
            a.fill_(-1)  # must not reach the run that already read a
            expected = torch.full_like(d, 22 * step)
            assert torch.equal(d, expected)
    stream.synchronize()


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16,
                                   torch.bfloat16, torch.float64, torch.int32,
                                   torch.int64, torch.bool])
def test_cuda_dtypes(dtype):
    op = "and" if dtype == torch.bool else "add"
    model = binary_model(dtype, op, (3, 5), "cuda")
    if dtype == torch.bool:
        a = torch.rand(3, 5, device="cuda") > 0.5
        b = torch.rand(3, 5, device="cuda") > 0.5
        expected = a & b
    else:
        a = (torch.randn(3, 5, device="cuda") * 10).to(dtype)
        b = (torch.randn(3, 5, device="cuda") * 10).to(dtype)
        expected = a + b
    (c,) = model(a, b)
    assert c.dtype == dtype and c.device.type == "cuda"
    torch.testing.assert_close(c, expected)


@needs_gpu
def test_cuda_model_on_host_arrays_and_errors():
    model = fusec.compile(SEED, target="cuda")
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (z,) = model(x, x)
    np.testing.assert_allclose(
        z, seed_reference(torch.from_numpy(x), torch.from_numpy(x)).numpy(),
        rtol=1e-5, atol=1e-6)
    t = torch.randn(3, 2, device="cuda").t()
    with pytest.raises(fusec.Error, match="input 'x' is not contiguous"):
        model(t, t.contiguous())
    with pytest.raises(fusec.Error, match="input 'y' is f32\\[2, 3\\] but "
                       "the tensor given is f16\\[2, 3\\]"):
        model(t.contiguous(), t.contiguous().half())


DECODER = os.path.join(os.path.dirname(SEED), os.pardir, "test", "models",
                       "generate", "decoder.onnx")


@needs_gpu
def test_cuda_cache_updated_in_place():
    """The decode step of examples/generate on CUDA tensors: its present
    caches written into the past caches' own memory give what separate
    outputs hold; an output over another input is refused."""
    model = fusec.compile(DECODER, target="cuda", input_shapes={"ids": (1, 1)})
    assert model.updates_input["present_key_0"] == "past_key_0"
    generator = torch.Generator(device="cuda").manual_seed(3)
    inputs = [torch.tensor([[7]], device="cuda"),
              torch.tensor([5], device="cuda")]
    inputs += [torch.randn(spec.shape, device="cuda", generator=generator)
               for spec in model.inputs[2:]]
    separate = model(*inputs)
    caches = [t.clone() for t in inputs[2:]]
    outputs = [torch.empty_like(t) for t in separate[:3]] + caches
    model(*inputs[:2], *caches, out=outputs)
    torch.cuda.synchronize()
    for got, expected in zip(outputs, separate):
        assert torch.equal(got, expected)
    with pytest.raises(fusec.Error, match="overlaps input 'past_key_0'"):
        model(*inputs, out=separate[:3] + [inputs[2]] * 4)
