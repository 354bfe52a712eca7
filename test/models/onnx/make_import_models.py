"""Writes the ONNX import edge cases of test/e2e/onnx-ops.test, each output
checked against ONNX's reference evaluator. Run by hand with the PyPI onnx
package (it has onnx.reference): `python3 make_import_models.py`; the
outputs are committed.

int_constant_folding.onnx: casts and arithmetic over integer initializers
with static output shapes, which ONNX's shape inference "data propagation"
also evaluates: its values pass through a Cast to float unchanged and lose
the upper bits of int64 initializers, so fusec must compute these nodes
itself.

float_attr_defaults.onnx: f64 activations with their float attributes left
out, whose defaults are floats (LeakyRelu's alpha is 0.01f, not 0.01).

softmax_opset11.onnx: Softmax and LogSoftmax before opset 13, which
normalize over every dim from `axis` (default 1) on; the expected outputs
are computed here from that definition (onnx.reference applies opset 13's
whatever the model's opset).

split_opset11.onnx: Split with its sizes as the attribute `split`, as
opsets before 13 give them.

mean_f16.onnx: Mean of f16 inputs is one op: its sum is not an f16 value
that could overflow (the mean of 100.5 and 65504 is 32800); expected outputs
computed here in f32 and rounded once.

integer_logs.onnx: ReduceLogSum and ReduceLogSumExp of integers, whose
ONNX types include int32 and int64 though onnx.reference refuses them: the
real result (sums in f64, so an int32 sum past 2^31 does not wrap),
truncated toward zero, computed here.

integer_matmul.onnx: MatMul and Gemm of integers (no library multiplies
them): NumPy's wrapping matmul, broadcast batches, 1-D operands, Gemm's
transposes, alpha and beta.

cumsum_edges.onnx: CumSum forward and reverse, inclusive and exclusive,
over signed zeros, infinities and NaN (values whose sums are exact in any
order), and of int64 values that wrap.

batchnorm_conv_free.onnx: BatchNormalization at inference on a 3-D input
(the order of ONNX's reference: scale * (x - mean) / sqrt(var + eps) + B),
and DepthToSpace (DCR, CRD), SpaceToDepth and MeanVarianceNormalization.

pad_runtime_value.onnx: Pad whose constant_value is a graph input (NaN for
f32, -7 for int64), selected outside the input at run time.

quantize_linear.onnx: QuantizeLinear to u8 (no zero point) and to i8 per
axis, with ties (rounded half to even) and values past the dtype's range
(saturated), and DynamicQuantizeLinear's three outputs.

one_hot.onnx: OneHot with negative and out-of-range indices (all off),
along the last axis and along axis 0, int32 and f32 values.

lrn.onnx: LRN with an even and an odd size over 6 channels; expected
outputs computed here from the spec's formula (onnx.reference 1.23 loops
over the batch dim instead of the channels).

pooling.onnx: MaxPool and AveragePool with pads, strides, dilations,
ceil_mode, count_include_pad, auto_pad SAME_UPPER and VALID, in 1-D and
2-D, against onnx.reference.

convolution.onnx: Conv with pads, strides, dilations, a bias, groups
(depthwise too), auto_pad SAME_LOWER, 1-D and 3-D, weights as an
initializer and as a graph input; ConvTranspose with strides, pads,
output_padding, dilations, groups, output_shape and auto_pad SAME_UPPER;
against onnx.reference (f64 for the f64 case).

cnn_block.onnx: a small ResNet-style network, each Conv feeding the next
(their shapes come from ONNX's inference): Conv + BatchNormalization +
Relu, MaxPool, a residual block, a strided 1x1 Conv, InstanceNormalization,
GlobalAveragePool, Flatten and Gemm; GlobalMaxPool and a ConvTranspose
upsampling as further outputs; against onnx.reference.

old_opsets.onnx: a model of opset 6, whose ops fusec reads in their
versions of then: Add with the legacy broadcast = 1 (the second operand
matched to the first's trailing dims), Gemm with broadcast = 1, PRelu with
a slope per channel, BatchNormalization with is_test = 1, Softmax over
every dim from axis 1; expected outputs computed here from those
definitions.

old_opset_errors.onnx: the opset-6 forms fusec refuses, each reported:
broadcasting from an axis, Pad's attributes, BatchNormalization with
is_test = 0 (the batch's statistics).

resize.onnx: Resize of a u8 image by cubic interpolation (overshoot
rounded half to even and saturated) and by linear sizes, f16 linear with
align_corners, int32 nearest (round_prefer_ceil, asymmetric), f32
tf_crop_and_resize on two axes with an extrapolation value, and cubic with
exclude_outside on a 3-D tensor; against onnx.reference.

gather_nd_eye.onnx: GatherND with negative indices, batch_dims 0, 1 and 2
and whole-element tuples; EyeLike of a non-square shape with k = -1 and
k = 2 and another dtype; ThresholdedRelu of f64 with a negative alpha;
against onnx.reference.

quantized.onnx: MatMulInteger with a per-row zero point for a (u8, of
shape [D, M, 1]) and a per-column one for b (i8), batched; QLinearMatMul (u8) whose results
saturate at both ends; ConvInteger with pads (padding with x's zero point)
and per-channel weight zero points; QLinearConv (i8) with a bias, per-
channel weight scales, strides and groups; against onnx.reference.

einsum_windows.onnx: Einsum with broadcast ellipsis dims, a diagonal, an
implicit trace, an implicit three-operand chain, an outer product and i32
operands; HannWindow, HammingWindow and BlackmanWindow, periodic and
symmetric; against onnx.reference (NumPy's einsum).

scatter.onnx: ScatterElements along axis 1 with indices narrower than the
data on the other dims, negative and duplicate indices (none: the last
wins; add and mul), i32 data; ScatterND of slices (m < rank) with a
negative index, of single elements with duplicates added, f16 data and a
KV-cache-like update of one position per batch and head; against
onnx.reference."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

I64, I32, I8, F, F16, H, D = (TensorProto.INT64, TensorProto.INT32,
                              TensorProto.INT8, TensorProto.FLOAT,
                              TensorProto.FLOAT16, TensorProto.FLOAT16,
                              TensorProto.DOUBLE)


def save(name, nodes, inputs, outputs, opset, initializers=()):
    """name.onnx: the graph, readable by Debian's libonnx 1.12 (opsets up
    to 17: IR version 8); a newer opset keeps the IR version the onnx
    package writes and gets its full check."""
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              list(initializers))
    model = helper.make_model(graph, producer_name="fusec",
                              opset_imports=[helper.make_opsetid("", opset)])
    if opset <= 17:
        model.ir_version = 8
    onnx.checker.check_model(model, full_check=opset > 17)
    onnx.save(model, name + ".onnx")


def write_tensors(name, inputs, outputs):
    """name_input_N.pb and name_output_N.pb."""
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for index, array in enumerate(arrays):
            with open(f"{name}_{kind}_{index}.pb", "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())


def reference(name, feeds):
    """onnx.reference's outputs for `feeds` (name -> array)."""
    # int64 sums wrap, as ONNX's do; inf - inf is NaN.
    with np.errstate(over="ignore", invalid="ignore"):
        return ReferenceEvaluator(name + ".onnx").run(None, feeds)


def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


# int_constant_folding
initializers = [
    numpy_helper.from_array(np.array([1, -1, 200, 2**31 - 1], np.int32),
                            "i32"),
    numpy_helper.from_array(
        np.array([2**32 - 1, 2**53 + 1, 2**24 + 1, 300], np.int64), "i64"),
    numpy_helper.from_array(
        np.array([2**62, 2**63 - 1, -2**63, 5], np.int64), "a"),
    numpy_helper.from_array(np.array([2, 2, -3, 2], np.int64), "b"),
]
nodes = [
    helper.make_node("Cast", ["i32"], ["i32_to_f32"], to=F),
    helper.make_node("Cast", ["i32"], ["i32_to_i8"], to=I8),
    helper.make_node("Cast", ["i32"], ["i32_to_f16"], to=F16),
    helper.make_node("Cast", ["i64"], ["f32_of_i64"], to=F),
    helper.make_node("Cast", ["f32_of_i64"], ["i64_via_f32"], to=I64),
    helper.make_node("Cast", ["i64"], ["i8_of_i64"], to=I8),
    helper.make_node("Cast", ["i8_of_i64"], ["i64_via_i8"], to=I64),
    helper.make_node("Sub", ["a", "b"], ["sub"]),
    helper.make_node("Add", ["a", "b"], ["add"]),
    helper.make_node("Mul", ["a", "b"], ["mul"]),
]
outputs = [value("i32_to_f32", F, [4]), value("i32_to_i8", I8, [4]),
           value("i32_to_f16", F16, [4]), value("i64_via_f32", I64, [4]),
           value("i64_via_i8", I64, [4]), value("sub", I64, [4]),
           value("add", I64, [4]), value("mul", I64, [4])]
save("int_constant_folding", nodes, [], outputs, 17, initializers)
write_tensors("int_constant_folding", [],
              reference("int_constant_folding", {}))

# float_attr_defaults
ops = ["LeakyRelu", "HardSigmoid", "Selu", "Elu", "Shrink"]
save("float_attr_defaults",
     [helper.make_node(op, ["x"], [op.lower()]) for op in ops],
     [value("x", D, [6])], [value(op.lower(), D, [6]) for op in ops], 17)
x = np.array([-3.5, -1.0, -0.25, 0.0, 0.7, 4.0])
write_tensors("float_attr_defaults", [x],
              reference("float_attr_defaults", {"x": x}))

# softmax_opset11
nodes = [
    helper.make_node("Softmax", ["x"], ["softmax_default"]),
    helper.make_node("LogSoftmax", ["x"], ["log_softmax_0"], axis=0),
    helper.make_node("Softmax", ["x"], ["softmax_last"], axis=-1),
    helper.make_node("Softmax", ["v"], ["softmax_vector"], axis=0),
]
save("softmax_opset11", nodes, [value("x", F, [2, 3, 4]), value("v", F, [5])],
     [value("softmax_default", F, [2, 3, 4]),
      value("log_softmax_0", F, [2, 3, 4]),
      value("softmax_last", F, [2, 3, 4]), value("softmax_vector", F, [5])],
     11)
rng = np.random.default_rng(11)
x = rng.uniform(-4, 4, [2, 3, 4]).astype(np.float32)
v = np.array([1.0, -np.inf, 3.0, 0.5, -2.0], np.float32)


def coerced(values, axis, log=False):
    """Softmax-11: over the 2-D view [prod(dims[:axis]), prod(dims[axis:])],
    in f64, rounded to f32."""
    rows = values.astype(np.float64).reshape(
        int(np.prod(values.shape[:axis])), -1)
    shifted = rows - rows.max(axis=1, keepdims=True)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    result = shifted - np.log(total) if log else np.exp(shifted) / total
    return result.reshape(values.shape).astype(np.float32)


write_tensors("softmax_opset11", [x, v],
              [coerced(x, 1), coerced(x, 0, log=True), coerced(x, 2),
               coerced(v, 0)])

# split_opset11
save("split_opset11",
     [helper.make_node("Split", ["x"], ["left", "right"], axis=1,
                       split=[1, 3])],
     [value("x", F, [2, 4])],
     [value("left", F, [2, 1]), value("right", F, [2, 3])], 11)
x = np.arange(8, dtype=np.float32).reshape(2, 4)
write_tensors("split_opset11", [x], reference("split_opset11", {"x": x}))

# mean_f16
save("mean_f16",
     [helper.make_node("Mean", ["a", "b"], ["mean2"]),
      helper.make_node("Mean", ["a", "b", "c"], ["mean3"])],
     [value(v, H, [4]) for v in "abc"],
     [value(v, H, [4]) for v in ("mean2", "mean3")], 17)
a = np.array([100.5, 1, -65504, 0.25], np.float16)
b = np.array([65504, 2, -65504, 3e-5], np.float16)
c = np.array([65504, -1, 65504, 1], np.float16)
wide = [t.astype(np.float32) for t in (a, b, c)]
write_tensors("mean_f16", [a, b, c],
              [((wide[0] + wide[1]) / np.float32(2)).astype(np.float16),
               ((wide[0] + wide[1] + wide[2]) / np.float32(3))
               .astype(np.float16)])

# integer_logs
save("integer_logs",
     [helper.make_node("ReduceLogSum", ["x"], ["log_sum"], axes=[1],
                       keepdims=0),
      helper.make_node("ReduceLogSumExp", ["y"], ["log_sum_exp"], axes=[0],
                       keepdims=1)],
     [value("x", I32, [3, 4]), value("y", I64, [5, 2])],
     [value("log_sum", I32, [3]), value("log_sum_exp", I64, [1, 2])], 17)
x = np.array([[2**31 - 1, 2**31 - 1, 5, 0], [1, 1, 1, 4], [0, 2, 3, 3]],
             np.int32)
y = np.array([[5, -40], [4, -41], [4, -39], [4, -40], [4, -40]], np.int64)
wide = y.astype(np.float64)
top = wide.max(axis=0, keepdims=True)
write_tensors("integer_logs", [x, y],
              [np.trunc(np.log(x.astype(np.float64).sum(axis=1)))
               .astype(np.int32),
               np.trunc(top + np.log(np.exp(wide - top).sum(axis=0,
                                                            keepdims=True)))
               .astype(np.int64)])

# integer_matmul
save("integer_matmul",
     [helper.make_node("MatMul", ["a", "b"], ["batched"]),
      helper.make_node("MatMul", ["v", "b"], ["vector_times_batch"]),
      helper.make_node("Gemm", ["g", "h", "c"], ["gemm"], transA=1,
                       alpha=2.0, beta=-1.0),
      helper.make_node("Gemm", ["g", "h", "c"], ["gemm_integer"], transA=1)],
     [value("a", I64, [2, 1, 3, 4]), value("b", I64, [3, 4, 2]),
      value("v", I64, [4]), value("g", I32, [4, 3]), value("h", I32, [4, 5]),
      value("c", I32, [5])],
     [value("batched", I64, [2, 3, 3, 2]),
      value("vector_times_batch", I64, [3, 2]), value("gemm", I32, [3, 5]),
      value("gemm_integer", I32, [3, 5])], 17)
rng = np.random.default_rng(13)
a = rng.integers(-2**62, 2**62, [2, 1, 3, 4], dtype=np.int64)
b = rng.integers(-2**62, 2**62, [3, 4, 2], dtype=np.int64)
v = rng.integers(-2**62, 2**62, [4], dtype=np.int64)
g = rng.integers(-50, 50, [4, 3], dtype=np.int32)
h = rng.integers(-50, 50, [4, 5], dtype=np.int32)
c = rng.integers(-1000, 1000, [5], dtype=np.int32)
feeds = {"a": a, "b": b, "v": v, "g": g, "h": h, "c": c}
write_tensors("integer_matmul", list(feeds.values()),
              reference("integer_matmul", feeds))

# cumsum_edges
F32 = F
nodes, outs = [], []
for exclusive in (0, 1):
    for reverse in (0, 1):
        name = f"cumsum_e{exclusive}_r{reverse}"
        nodes.append(helper.make_node("CumSum", ["x", "axis1"], [name],
                                      exclusive=exclusive, reverse=reverse))
        outs.append(value(name, F32, [3, 4]))
nodes.append(helper.make_node("CumSum", ["big", "axis0"], ["cumsum_int"]))
outs.append(value("cumsum_int", I64, [3, 2]))
save("cumsum_edges", nodes, [value("x", F32, [3, 4]), value("big", I64, [3, 2])],
     outs, 17,
     [numpy_helper.from_array(np.array(1, np.int64), "axis1"),
      numpy_helper.from_array(np.array(0, np.int32), "axis0")])
x = np.array([[-0.0, -0.0, 1.5, -1.5], [0.0, -0.0, np.inf, -2.0],
              [-np.inf, np.inf, np.nan, -0.0]], np.float32)
big = np.array([[2**62, -5], [2**62, 7], [2**62, -2**63]], np.int64)
write_tensors("cumsum_edges", [x, big],
              reference("cumsum_edges", {"x": x, "big": big}))

# batchnorm_conv_free
nodes = [
    helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean",
                                            "var"], ["batch_norm"],
                     epsilon=1e-3),
    helper.make_node("DepthToSpace", ["d"], ["dcr"], blocksize=2),
    helper.make_node("DepthToSpace", ["d"], ["crd"], blocksize=2, mode="CRD"),
    helper.make_node("SpaceToDepth", ["d"], ["space_to_depth"], blocksize=2),
    helper.make_node("MeanVarianceNormalization", ["d"], ["mvn"]),
]
save("batchnorm_conv_free", nodes,
     [value("x", F, [2, 3, 5]), value("scale", F, [3]), value("bias", F, [3]),
      value("mean", F, [3]), value("var", F, [3]), value("d", F, [1, 8, 2, 4])],
     [value("batch_norm", F, [2, 3, 5]), value("dcr", F, [1, 2, 4, 8]),
      value("crd", F, [1, 2, 4, 8]), value("space_to_depth", F, [1, 32, 1, 2]),
      value("mvn", F, [1, 8, 2, 4])], 15)
rng = np.random.default_rng(17)
feeds = {"x": rng.uniform(-3, 3, [2, 3, 5]).astype(np.float32),
         "scale": rng.uniform(-2, 2, [3]).astype(np.float32),
         "bias": rng.uniform(-1, 1, [3]).astype(np.float32),
         "mean": rng.uniform(-1, 1, [3]).astype(np.float32),
         "var": np.array([0.5, 0.0, 2.0], np.float32),
         "d": rng.uniform(-3, 3, [1, 8, 2, 4]).astype(np.float32)}
feeds["x"][0, 1, 2] = np.nan
write_tensors("batchnorm_conv_free", list(feeds.values()),
              reference("batchnorm_conv_free", feeds))

# pad_runtime_value
save("pad_runtime_value",
     [helper.make_node("Pad", ["x", "pads", "v"], ["padded"]),
      helper.make_node("Pad", ["n", "pads", "w"], ["padded_int"])],
     [value("x", F, [3, 4]), value("v", F, []), value("n", I64, [3, 4]),
      value("w", I64, [1])],
     [value("padded", F, [6, 5]), value("padded_int", I64, [6, 5])], 17,
     [numpy_helper.from_array(np.array([1, 0, 2, 1], np.int64), "pads")])
feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4) - 5,
         "v": np.array(np.nan, np.float32),
         "n": np.arange(12, dtype=np.int64).reshape(3, 4) * 2**40,
         "w": np.array([-7], np.int64)}
write_tensors("pad_runtime_value", list(feeds.values()),
              reference("pad_runtime_value", feeds))

# quantize_linear
I8 = TensorProto.INT8
U8 = TensorProto.UINT8
save("quantize_linear",
     [helper.make_node("QuantizeLinear", ["x", "scale"], ["to_u8"]),
      helper.make_node("QuantizeLinear", ["x", "scales", "zero_points"],
                       ["to_i8"], axis=1),
      helper.make_node("DynamicQuantizeLinear", ["x"],
                       ["dynamic", "dynamic_scale", "dynamic_zero_point"])],
     [value("x", F, [2, 4])],
     [value("to_u8", U8, [2, 4]), value("to_i8", I8, [2, 4]),
      value("dynamic", U8, [2, 4]), value("dynamic_scale", F, []),
      value("dynamic_zero_point", U8, [])], 13,
     [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
      numpy_helper.from_array(np.array([0.5, 2, 0.25, 1], np.float32),
                              "scales"),
      numpy_helper.from_array(np.array([0, -3, 10, 127], np.int8),
                              "zero_points")])
x = np.array([[1.25, 1.75, -3.0, 300.0], [5.0, -5.0, 0.625, -40.0]],
             np.float32)
write_tensors("quantize_linear", [x], reference("quantize_linear", {"x": x}))

# one_hot
save("one_hot",
     [helper.make_node("OneHot", ["indices", "depth", "int_values"],
                       ["last_axis"]),
      helper.make_node("OneHot", ["indices", "depth", "float_values"],
                       ["first_axis"], axis=0)],
     [value("indices", I64, [2, 5])],
     [value("last_axis", I32, [2, 5, 4]), value("first_axis", F, [4, 2, 5])],
     11,
     [numpy_helper.from_array(np.array(4.0, np.float32), "depth"),
      numpy_helper.from_array(np.array([2, 7], np.int32), "int_values"),
      numpy_helper.from_array(np.array([-1.5, 0.25], np.float32),
                              "float_values")])
indices = np.array([[0, 3, -1, -4, 4], [-5, 2, 1, 100, -2]], np.int64)
write_tensors("one_hot", [indices],
              reference("one_hot", {"indices": indices}))

# lrn
save("lrn",
     [helper.make_node("LRN", ["x"], ["lrn_even"], size=2, alpha=0.01,
                       beta=0.6, bias=2.0),
      helper.make_node("LRN", ["x"], ["lrn_odd"], size=5)],
     [value("x", F, [2, 6, 3, 4])],
     [value("lrn_even", F, [2, 6, 3, 4]), value("lrn_odd", F, [2, 6, 3, 4])],
     13)
x = np.random.default_rng(19).uniform(-3, 3, [2, 6, 3, 4]).astype(np.float32)


def lrn(values, size, alpha=1e-4, beta=0.75, bias=1.0):
    """The spec: sums of squares over [c - floor((size - 1) / 2),
    c + ceil((size - 1) / 2)], in f64, rounded to f32."""
    wide = values.astype(np.float64)
    squares = np.zeros_like(wide)
    low, high = (size - 1) // 2, size - 1 - (size - 1) // 2
    for c in range(wide.shape[1]):
        squares[:, c] = (wide[:, max(0, c - low):c + high + 1] ** 2).sum(axis=1)
    return (wide / (bias + alpha / size * squares) ** beta).astype(np.float32)


write_tensors("lrn", [x], [lrn(x, 2, 0.01, 0.6, 2.0), lrn(x, 5)])

# pooling
pools = [("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1])),
         ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
         ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], count_include_pad=1)),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2],
                              ceil_mode=1)),
         ("AveragePool", dict(kernel_shape=[2, 3], auto_pad="VALID"))]
nodes = [helper.make_node(op, ["x"], [f"pool_{i}"], **attrs)
         for i, (op, attrs) in enumerate(pools)]
nodes.append(helper.make_node("MaxPool", ["v"], ["pool_1d_max"],
                              kernel_shape=[3], strides=[2],
                              auto_pad="SAME_UPPER"))
nodes.append(helper.make_node("AveragePool", ["v"], ["pool_1d_average"],
                              kernel_shape=[4], strides=[3],
                              auto_pad="SAME_UPPER"))
x = np.random.default_rng(23).uniform(-3, 3, [1, 2, 7, 7]).astype(np.float32)
v = np.random.default_rng(29).uniform(-3, 3, [2, 3, 10]).astype(np.float32)
feeds = {"x": x, "v": v}
names = [f"pool_{i}" for i in range(len(pools))] + ["pool_1d_max",
                                                   "pool_1d_average"]
save("pooling", nodes, [value("x", F, [1, 2, 7, 7]), value("v", F, [2, 3, 10])],
     [value(name, F, dims) for name, dims in zip(names, [
         [1, 2, 4, 4], [1, 2, 3, 3], [1, 2, 5, 5], [1, 2, 4, 4], [1, 2, 4, 4],
         [1, 2, 3, 3], [1, 2, 6, 5], [2, 3, 5], [2, 3, 4]])], 17)
write_tensors("pooling", [x, v], reference("pooling", feeds))

# convolution
rng = np.random.default_rng(31)
x = rng.uniform(-2, 2, [2, 4, 9, 8]).astype(np.float32)
v = rng.uniform(-2, 2, [2, 4, 11]).astype(np.float32)
u = rng.uniform(-2, 2, [1, 2, 4, 5, 3]).astype(np.float64)
w_in = rng.uniform(-1, 1, [6, 2, 3, 3]).astype(np.float32)
weights = {
    "w_plain": rng.uniform(-1, 1, [5, 4, 3, 3]).astype(np.float32),
    "b_plain": rng.uniform(-1, 1, [5]).astype(np.float32),
    "w_depthwise": rng.uniform(-1, 1, [8, 1, 3, 2]).astype(np.float32),
    "w_1d": rng.uniform(-1, 1, [3, 4, 4]).astype(np.float32),
    "w_3d": rng.uniform(-1, 1, [3, 2, 2, 3, 2]).astype(np.float64),
    "b_3d": rng.uniform(-1, 1, [3]).astype(np.float64),
    "wt_plain": rng.uniform(-1, 1, [4, 3, 3, 3]).astype(np.float32),
    "bt_plain": rng.uniform(-1, 1, [3]).astype(np.float32),
    "wt_group": rng.uniform(-1, 1, [4, 3, 2, 3]).astype(np.float32),
    "wt_1d": rng.uniform(-1, 1, [4, 2, 3]).astype(np.float32),
}
convs = [
    ("Conv", ["x", "w_plain", "b_plain"], "conv_plain",
     dict(pads=[1, 0, 2, 1], strides=[2, 1])),
    ("Conv", ["x", "w_plain"], "conv_dilated",
     dict(dilations=[2, 3], strides=[1, 2])),
    ("Conv", ["x", "w_input"], "conv_grouped_input_weights",
     dict(group=2, auto_pad="SAME_LOWER", strides=[2, 2])),
    ("Conv", ["x", "w_depthwise"], "conv_depthwise",
     dict(group=4, pads=[1, 1, 1, 1])),
    ("Conv", ["v", "w_1d"], "conv_1d",
     dict(strides=[3], auto_pad="SAME_UPPER")),
    ("Conv", ["u", "w_3d", "b_3d"], "conv_3d",
     dict(pads=[1, 0, 1, 0, 1, 1])),
    ("ConvTranspose", ["x", "wt_plain", "bt_plain"], "convt_plain",
     dict(strides=[2, 3], pads=[1, 2, 0, 1], output_padding=[1, 0])),
    ("ConvTranspose", ["x", "wt_group"], "convt_grouped_dilated",
     dict(group=2, dilations=[2, 1], strides=[1, 2])),
    ("ConvTranspose", ["x", "wt_plain"], "convt_output_shape",
     dict(strides=[2, 2], output_shape=[20, 15])),
    ("ConvTranspose", ["v", "wt_1d"], "convt_1d_same_upper",
     dict(strides=[2], auto_pad="SAME_UPPER")),
]
nodes = [helper.make_node(op, inputs, [name], **attrs)
         for op, inputs, name, attrs in convs]
feeds = {"x": x, "v": v, "u": u, "w_input": w_in}
inputs = [value("x", F, list(x.shape)), value("v", F, list(v.shape)),
          value("u", D, list(u.shape)), value("w_input", F, list(w_in.shape))]
initializers = [numpy_helper.from_array(array, name)
                for name, array in weights.items()]
# The outputs' shapes from ONNX's own inference.
probe = helper.make_model(
    helper.make_graph(nodes, "probe", inputs, [], initializers),
    opset_imports=[helper.make_opsetid("", 17)])
inferred = {info.name: info for info in
            onnx.shape_inference.infer_shapes(probe).graph.value_info}
save("convolution", nodes, inputs, [inferred[name] for _, _, name, _ in convs],
     17, initializers)


def conv_transpose(x, w, group, strides, dilations, pads_begin, out_shape,
                   bias=None):
    """The spec's definition, scattering every product: input position i
    and kernel position k add to output position i * stride + k *
    dilation - pads_begin (onnx.reference 1.23 slices grouped weights by
    output channels and fails on them)."""
    n, c = x.shape[:2]
    per_group_in, per_group_out = c // group, w.shape[1]
    y = np.zeros([n, per_group_out * group, *out_shape], np.float64)
    for i in np.ndindex(*x.shape[2:]):
        for k in np.ndindex(*w.shape[2:]):
            o = [i[d] * strides[d] + k[d] * dilations[d] - pads_begin[d]
                 for d in range(len(i))]
            if not all(0 <= o[d] < out_shape[d] for d in range(len(o))):
                continue
            for g in range(group):
                xs = x[(slice(None), slice(g * per_group_in,
                                           (g + 1) * per_group_in), *i)]
                ws = w[(slice(g * per_group_in, (g + 1) * per_group_in),
                        slice(None), *k)]
                y[(slice(None), slice(g * per_group_out,
                                      (g + 1) * per_group_out), *o)] += xs @ ws
    if bias is not None:
        y += bias.reshape([1, -1] + [1] * len(out_shape))
    return y.astype(x.dtype)


# Conv against onnx.reference; ConvTranspose against the spec's definition
# above, which agrees with onnx.reference where that one runs: it slices
# grouped weights by output channels, and with output_shape but no pads
# it takes pads of 0 (the spec generates them from output_shape).
names = [name for _, _, name, _ in convs]
convolutions = helper.make_model(
    helper.make_graph([n for n in nodes if n.op_type == "Conv"], "conv",
                      inputs, [inferred[n.output[0]] for n in nodes
                               if n.op_type == "Conv"], initializers),
    opset_imports=[helper.make_opsetid("", 17)])
expected = list(ReferenceEvaluator(convolutions).run(None, feeds))
transposed = {  # input, weights, group, strides, dilations, pads_begin, shape
    "convt_plain": (x, "wt_plain", 1, [2, 3], [1, 1], [1, 2], [19, 21]),
    "convt_grouped_dilated": (x, "wt_group", 2, [1, 2], [2, 1], [0, 0],
                              [11, 17]),
    "convt_output_shape": (x, "wt_plain", 1, [2, 2], [1, 1], [0, 1],
                           [20, 15]),
    "convt_1d_same_upper": (v, "wt_1d", 1, [2], [1], [0], [22]),
}
for name, (data, w, group, strides, dilations, begin, shape) in \
        transposed.items():
    y = conv_transpose(data, weights[w], group, strides, dilations, begin,
                       shape, weights["bt_plain"] if name == "convt_plain"
                       else None)
    if name in ("convt_plain", "convt_1d_same_upper"):
        node = next(n for n in nodes if n.output[0] == name)
        single = helper.make_model(
            helper.make_graph([node], name, inputs, [inferred[name]],
                              initializers),
            opset_imports=[helper.make_opsetid("", 17)])
        check = ReferenceEvaluator(single).run(None, feeds)[0]
        assert np.allclose(y, check, rtol=1e-5, atol=1e-5), name
    expected.append(y)
write_tensors("convolution", [x, v, u, w_in], expected)

# cnn_block
rng = np.random.default_rng(37)


def tensor(name, *shape, low=-0.5, high=0.5):
    return numpy_helper.from_array(
        rng.uniform(low, high, shape).astype(np.float32), name)


initializers = [tensor("stem_w", 8, 3, 3, 3), tensor("stem_b", 8),
                tensor("res1_w", 8, 8, 3, 3), tensor("res2_w", 8, 8, 3, 3),
                tensor("down_w", 16, 8, 1, 1), tensor("in_scale", 16),
                tensor("in_b", 16), tensor("fc_w", 10, 16),
                tensor("fc_b", 10), tensor("up_w", 8, 4, 2, 2)]
for prefix in ("bn0", "bn1", "bn2"):
    initializers += [tensor(prefix + "_scale", 8, low=0.5, high=1.5),
                     tensor(prefix + "_b", 8),
                     tensor(prefix + "_mean", 8),
                     tensor(prefix + "_var", 8, low=0.5, high=1.5)]


def bn(x, prefix, y):
    return helper.make_node("BatchNormalization",
                            [x, prefix + "_scale", prefix + "_b",
                             prefix + "_mean", prefix + "_var"], [y])


node = helper.make_node
nodes = [node("Conv", ["x", "stem_w", "stem_b"], ["stem"], strides=[2, 2],
              pads=[1, 1, 1, 1]),
         bn("stem", "bn0", "stem_bn"), node("Relu", ["stem_bn"], ["stem_act"]),
         node("MaxPool", ["stem_act"], ["pooled"], kernel_shape=[3, 3],
              strides=[2, 2], pads=[1, 1, 1, 1]),
         node("Conv", ["pooled", "res1_w"], ["res1"], pads=[1, 1, 1, 1]),
         bn("res1", "bn1", "res1_bn"), node("Relu", ["res1_bn"], ["res1_act"]),
         node("Conv", ["res1_act", "res2_w"], ["res2"], pads=[1, 1, 1, 1]),
         bn("res2", "bn2", "res2_bn"),
         node("Add", ["res2_bn", "pooled"], ["residual"]),
         node("Relu", ["residual"], ["block"]),
         node("Conv", ["block", "down_w"], ["down"], strides=[2, 2]),
         node("InstanceNormalization", ["down", "in_scale", "in_b"],
              ["down_norm"], epsilon=1e-3),
         node("Relu", ["down_norm"], ["down_act"]),
         node("GlobalAveragePool", ["down_act"], ["gap"]),
         node("Flatten", ["gap"], ["features"]),
         node("Gemm", ["features", "fc_w", "fc_b"], ["logits"], transB=1),
         node("GlobalMaxPool", ["block"], ["block_max"]),
         node("ConvTranspose", ["block", "up_w"], ["upsampled"],
              strides=[2, 2])]
x = rng.uniform(-2, 2, [2, 3, 16, 16]).astype(np.float32)
save("cnn_block", nodes, [value("x", F, [2, 3, 16, 16])],
     [value("logits", F, [2, 10]), value("block_max", F, [2, 8, 1, 1]),
      value("upsampled", F, [2, 4, 8, 8])], 17, initializers)
write_tensors("cnn_block", [x], reference("cnn_block", {"x": x}))

# old_opsets: opset 6
rng = np.random.default_rng(41)
a = rng.uniform(-2, 2, [2, 3, 4]).astype(np.float32)
b = rng.uniform(-2, 2, [4]).astype(np.float32)
m = rng.uniform(-2, 2, [2, 5]).astype(np.float32)
w = rng.uniform(-1, 1, [5, 3]).astype(np.float32)
c = rng.uniform(-1, 1, [3]).astype(np.float32)
p = rng.uniform(-2, 2, [2, 3, 4, 5]).astype(np.float32)
slope = np.array([0.1, -0.5, 2.0], np.float32)
bn = [rng.uniform(0.5, 1.5, [3]).astype(np.float32) for _ in range(4)]
nodes = [helper.make_node("Add", ["a", "b"], ["sum"], broadcast=1),
         helper.make_node("Gemm", ["m", "w", "c"], ["affine"], broadcast=1),
         helper.make_node("PRelu", ["p", "slope"], ["prelu"]),
         helper.make_node("BatchNormalization",
                          ["p", "bn_scale", "bn_b", "bn_mean", "bn_var"],
                          ["normalized"], is_test=1, epsilon=1e-3),
         helper.make_node("Softmax", ["a"], ["softmax"])]
save("old_opsets", nodes,
     [value("a", F, [2, 3, 4]), value("b", F, [4]), value("m", F, [2, 5]),
      value("p", F, [2, 3, 4, 5])],
     [value("sum", F, [2, 3, 4]), value("affine", F, [2, 3]),
      value("prelu", F, [2, 3, 4, 5]), value("normalized", F, [2, 3, 4, 5]),
      value("softmax", F, [2, 3, 4])], 6,
     [numpy_helper.from_array(w, "w"), numpy_helper.from_array(c, "c"),
      numpy_helper.from_array(slope, "slope")] +
     [numpy_helper.from_array(t, n) for t, n in
      zip(bn, ["bn_scale", "bn_b", "bn_mean", "bn_var"])])
channel = [1, 3, 1, 1]
scale, shift, mean, var = (t.reshape(channel) for t in bn)
flat = a.reshape(2, 12).astype(np.float64)
softmax = np.exp(flat - flat.max(1, keepdims=True))
softmax /= softmax.sum(1, keepdims=True)
write_tensors("old_opsets", [a, b, m, p], [
    a + b,
    (m.astype(np.float64) @ w + c).astype(np.float32),
    np.where(p < 0, slope.reshape(channel) * p, p),
    (scale * (p - mean) / np.sqrt(var + np.float32(1e-3)) + shift).astype(
        np.float32),
    softmax.reshape(2, 3, 4).astype(np.float32)])

# old_opset_errors: opset 6
nodes = [helper.make_node("Add", ["a", "b"], ["axis_sum"], name="axis_add",
                          broadcast=1, axis=2),
         helper.make_node("BatchNormalization",
                          ["p", "bn_scale", "bn_b", "bn_mean", "bn_var"],
                          ["trained"], name="training_norm")]
save("old_opset_errors", nodes,
     [value("a", F, [2, 3, 4]), value("b", F, [3]),
      value("p", F, [2, 3, 4, 5])],
     [value("axis_sum", F, [2, 3, 4]), value("trained", F, [2, 3, 4, 5])],
     6,
     [numpy_helper.from_array(t, n) for t, n in
      zip(bn, ["bn_scale", "bn_b", "bn_mean", "bn_var"])])

# resize
rng = np.random.default_rng(43)
image = rng.integers(0, 256, [1, 3, 5, 7]).astype(np.uint8)
image[0, 0, 2, :] = 255  # a bright row next to dark ones: cubic overshoots
image[0, 0, 3, :] = 0
half = rng.uniform(-4, 4, [2, 3, 4]).astype(np.float16)
ints = rng.integers(-1000, 1000, [2, 3, 5]).astype(np.int32)
crop = rng.uniform(-2, 2, [1, 2, 6, 6]).astype(np.float32)
cube = rng.uniform(-2, 2, [3, 4, 5]).astype(np.float32)


def const(name, array):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(array, name))


f32 = np.float32
nodes = [
    const("scales_image", np.array([1, 1, 2.5, 1.5], f32)),
    helper.make_node("Resize", ["image", "", "scales_image"], ["image_cubic"],
                     mode="cubic"),
    const("sizes_image", np.array([1, 3, 3, 10], np.int64)),
    helper.make_node("Resize", ["image", "", "", "sizes_image"],
                     ["image_linear"], mode="linear"),
    const("scales_half", np.array([1, 2, 0.5], f32)),
    helper.make_node("Resize", ["half", "", "scales_half"], ["half_linear"],
                     mode="linear",
                     coordinate_transformation_mode="align_corners"),
    const("sizes_ints", np.array([3, 3, 8], np.int64)),
    helper.make_node("Resize", ["ints", "", "", "sizes_ints"],
                     ["ints_nearest"], mode="nearest",
                     nearest_mode="round_prefer_ceil",
                     coordinate_transformation_mode="asymmetric"),
    const("roi_crop", np.array([0, 0, 0.1, -0.2, 1, 1, 0.8, 1.3], f32)),
    const("sizes_crop", np.array([1, 2, 4, 7], np.int64)),
    helper.make_node("Resize", ["crop", "roi_crop", "", "sizes_crop"],
                     ["crop_resized"], mode="linear",
                     coordinate_transformation_mode="tf_crop_and_resize",
                     extrapolation_value=-7.5),
    const("scales_cube", np.array([1, 1.75, 0.6], f32)),
    helper.make_node("Resize", ["cube", "", "scales_cube"], ["cube_cubic"],
                     mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5),
    const("roi_image", np.array([0, 0, -0.3, 0.2, 1, 1, 0.9, 1.4], f32)),
    helper.make_node("Resize", ["image", "roi_image", "", "sizes_image"],
                     ["image_crop_nearest"], mode="nearest",
                     coordinate_transformation_mode="tf_crop_and_resize",
                     extrapolation_value=-3.0),
]
outputs = ["image_cubic", "image_linear", "half_linear", "ints_nearest",
           "crop_resized", "cube_cubic", "image_crop_nearest"]
feeds = {"image": image, "half": half, "ints": ints, "crop": crop,
         "cube": cube}
inputs = [value(name, elem, list(array.shape)) for (name, array), elem in
          zip(feeds.items(), [TensorProto.UINT8, H, I32, F, F])]
probe = helper.make_model(helper.make_graph(nodes, "probe", inputs, []),
                          opset_imports=[helper.make_opsetid("", 13)])
inferred = {info.name: info for info in
            onnx.shape_inference.infer_shapes(probe).graph.value_info}
save("resize", nodes, inputs, [inferred[name] for name in outputs], 13)
write_tensors("resize", list(feeds.values()), reference("resize", feeds))

# gather_nd_eye
rng = np.random.default_rng(47)
data = rng.uniform(-5, 5, [2, 3, 4, 5]).astype(np.float32)
index0 = np.array([[1, -1], [0, 2], [-2, 0]], np.int64)          # m = 2
index1 = np.array([[[2, -1, 4]], [[0, 3, -5]]], np.int64)        # b = 1, m = 3
index2 = rng.integers(-4, 4, [2, 3, 6, 1]).astype(np.int32)      # b = 2, m = 1
shape_of = rng.uniform(-1, 1, [3, 5]).astype(np.float32)
t = rng.uniform(-3, 3, [4, 6]).astype(np.float64)
nodes = [helper.make_node("GatherND", ["data", "index0"], ["nd_plain"]),
         helper.make_node("GatherND", ["data", "index1"], ["nd_batch1"],
                          batch_dims=1),
         helper.make_node("GatherND", ["data", "index2"], ["nd_batch2"],
                          batch_dims=2),
         helper.make_node("EyeLike", ["shape_of"], ["eye_below"], k=-1),
         helper.make_node("EyeLike", ["shape_of"], ["eye_int"], k=2,
                          dtype=TensorProto.INT32),
         helper.make_node("ThresholdedRelu", ["t"], ["thresholded"],
                          alpha=-0.5)]
feeds = {"data": data, "index0": index0, "index1": index1, "index2": index2,
         "shape_of": shape_of, "t": t}
inputs = [value(name, elem, list(array.shape)) for (name, array), elem in
          zip(feeds.items(), [F, I64, I64, I32, F, D])]
save("gather_nd_eye", nodes, inputs,
     [value("nd_plain", F, [3, 4, 5]), value("nd_batch1", F, [2, 1]),
      value("nd_batch2", F, [2, 3, 6]), value("eye_below", F, [3, 5]),
      value("eye_int", I32, [3, 5]), value("thresholded", D, [4, 6])], 13)
write_tensors("gather_nd_eye", list(feeds.values()),
              reference("gather_nd_eye", feeds))

# quantized
rng = np.random.default_rng(53)
U8, I8_ = TensorProto.UINT8, TensorProto.INT8
qa = rng.integers(0, 256, [2, 3, 5]).astype(np.uint8)
qb = rng.integers(-128, 128, [5, 4]).astype(np.int8)
qx = rng.integers(0, 256, [1, 4, 5, 5]).astype(np.uint8)
sx = rng.integers(-128, 128, [2, 4, 6, 6]).astype(np.int8)
initializers = [
    numpy_helper.from_array(
        rng.integers(0, 256, [2, 3, 1]).astype(np.uint8), "a_zero"),
    numpy_helper.from_array(np.array([-5, 0, 7, 127], np.int8), "b_zero"),
    numpy_helper.from_array(np.float32(0.05), "a_scale"),
    numpy_helper.from_array(np.uint8(100), "a_zero_scalar"),
    numpy_helper.from_array(
        rng.integers(0, 256, [5, 6]).astype(np.uint8), "qm_b"),
    numpy_helper.from_array(np.float32(0.02), "qm_b_scale"),
    numpy_helper.from_array(np.uint8(128), "qm_b_zero"),
    numpy_helper.from_array(np.float32(0.01), "qm_y_scale"),
    numpy_helper.from_array(np.uint8(120), "qm_y_zero"),
    numpy_helper.from_array(
        rng.integers(0, 256, [3, 4, 3, 3]).astype(np.uint8), "ci_w"),
    numpy_helper.from_array(np.uint8(17), "ci_x_zero"),
    numpy_helper.from_array(np.array([0, 128, 255], np.uint8), "ci_w_zero"),
    numpy_helper.from_array(np.float32(0.1), "qc_x_scale"),
    numpy_helper.from_array(np.int8(-3), "qc_x_zero"),
    numpy_helper.from_array(
        rng.integers(-128, 128, [6, 2, 3, 3]).astype(np.int8), "qc_w"),
    numpy_helper.from_array(
        rng.uniform(0.001, 0.01, [6]).astype(np.float32), "qc_w_scale"),
    numpy_helper.from_array(np.zeros([6], np.int8), "qc_w_zero"),
    numpy_helper.from_array(np.float32(0.05), "qc_y_scale"),
    numpy_helper.from_array(np.int8(4), "qc_y_zero"),
    numpy_helper.from_array(
        rng.integers(-2000, 2000, [6]).astype(np.int32), "qc_bias")]
nodes = [helper.make_node("MatMulInteger", ["qa", "qb", "a_zero", "b_zero"],
                          ["mm_integer"]),
         helper.make_node("QLinearMatMul",
                          ["qa", "a_scale", "a_zero_scalar", "qm_b",
                           "qm_b_scale", "qm_b_zero", "qm_y_scale",
                           "qm_y_zero"], ["qlinear_mm"]),
         helper.make_node("ConvInteger", ["qx", "ci_w", "ci_x_zero",
                                          "ci_w_zero"], ["conv_integer"],
                          pads=[1, 1, 1, 1]),
         helper.make_node("QLinearConv",
                          ["sx", "qc_x_scale", "qc_x_zero", "qc_w",
                           "qc_w_scale", "qc_w_zero", "qc_y_scale",
                           "qc_y_zero", "qc_bias"], ["qlinear_conv"],
                          group=2, strides=[2, 1], pads=[0, 1, 1, 0])]
feeds = {"qa": qa, "qb": qb, "qx": qx, "sx": sx}
inputs = [value("qa", U8, [2, 3, 5]), value("qb", I8_, [5, 4]),
          value("qx", U8, [1, 4, 5, 5]), value("sx", I8_, [2, 4, 6, 6])]
probe = helper.make_model(
    helper.make_graph(nodes, "probe", inputs, [], initializers),
    opset_imports=[helper.make_opsetid("", 13)])
inferred = {info.name: info for info in
            onnx.shape_inference.infer_shapes(probe).graph.value_info}
outputs = ["mm_integer", "qlinear_mm", "conv_integer", "qlinear_conv"]
save("quantized", nodes, inputs, [inferred[name] for name in outputs], 13,
     initializers)
expected = reference("quantized", feeds)
# Both ends saturate somewhere in the requantized outputs.
assert (expected[1] == 0).any() and (expected[1] == 255).any()
write_tensors("quantized", list(feeds.values()), expected)

# einsum_windows
rng = np.random.default_rng(59)
feeds = {"e0": rng.uniform(-1, 1, [2, 1, 3, 4]).astype(np.float32),
         "e1": rng.uniform(-1, 1, [5, 4, 2]).astype(np.float32),
         "sq": rng.integers(-50, 50, [4, 4]).astype(np.int32),
         "m": rng.uniform(-1, 1, [3, 3]).astype(np.float32),
         "c0": rng.uniform(-1, 1, [2, 3]).astype(np.float64),
         "c1": rng.uniform(-1, 1, [3, 4]).astype(np.float64),
         "c2": rng.uniform(-1, 1, [4, 2]).astype(np.float64),
         "u": rng.uniform(-1, 1, [3]).astype(np.float32),
         "w": rng.uniform(-1, 1, [4]).astype(np.float32)}
nodes = [helper.make_node("Einsum", ["e0", "e1"], ["batched"],
                          equation="...ij,...jk->...ik"),
         helper.make_node("Einsum", ["sq"], ["diagonal"], equation="ii->i"),
         helper.make_node("Einsum", ["m"], ["trace"], equation="ii"),
         helper.make_node("Einsum", ["c0", "c1", "c2"], ["chain"],
                          equation="ij,jk,kl"),
         helper.make_node("Einsum", ["u", "w"], ["outer"],
                          equation="i, j -> ij"),
         const("window_size", np.array(10, np.int64)),
         helper.make_node("HannWindow", ["window_size"], ["hann"]),
         helper.make_node("HammingWindow", ["window_size"], ["hamming"],
                          periodic=0, output_datatype=TensorProto.DOUBLE),
         helper.make_node("BlackmanWindow", ["window_size"], ["blackman"],
                          periodic=0)]
inputs = [value(name, {np.float32: F, np.float64: D, np.int32: I32}[
    array.dtype.type], list(array.shape)) for name, array in feeds.items()]
outputs = ["batched", "diagonal", "trace", "chain", "outer", "hann",
           "hamming", "blackman"]
probe = helper.make_model(helper.make_graph(nodes, "probe", inputs, []),
                          opset_imports=[helper.make_opsetid("", 17)])
inferred = {info.name: info for info in
            onnx.shape_inference.infer_shapes(probe).graph.value_info}
# ONNX's inference leaves the broadcast ellipsis result's shape open.
save("einsum_windows", nodes, inputs,
     [inferred.get(name) or value(name, F, [2, 5, 3, 2])
      for name in outputs], 17)
write_tensors("einsum_windows", list(feeds.values()),
              reference("einsum_windows", feeds))

# scatter
rng = np.random.default_rng(61)
feeds = {
    "se_data": rng.integers(-100, 100, [3, 5, 2]).astype(np.int32),
    "se_index": np.array([[[1, -1], [4, 0]], [[-5, 2], [2, 2]]], np.int64),
    "se_update": rng.integers(-100, 100, [2, 2, 2]).astype(np.int32),
    "nd_data": rng.uniform(-2, 2, [4, 3, 2]).astype(np.float16),
    "nd_index": np.array([[-1], [1]], np.int64),
    "nd_update": rng.uniform(-2, 2, [2, 3, 2]).astype(np.float16),
    "nd_point_index": np.array([[0, 1, 1], [0, 1, 1], [3, 2, 0]], np.int32),
    "nd_point_update": rng.uniform(-2, 2, [3]).astype(np.float16),
    "cache": rng.uniform(-1, 1, [2, 3, 6, 4]).astype(np.float32),
    "cache_index": np.array([[[[0, 0, 5]], [[0, 1, 5]], [[0, 2, 5]]],
                             [[[1, 0, 2]], [[1, 1, 2]], [[1, 2, 2]]]],
                            np.int64),
    "cache_update": rng.uniform(-1, 1, [2, 3, 1, 4]).astype(np.float32)}
nodes = [
    helper.make_node("ScatterElements", ["se_data", "se_index", "se_update"],
                     ["se_none"], axis=1),
    helper.make_node("ScatterElements", ["se_data", "se_index", "se_update"],
                     ["se_add"], axis=1, reduction="add"),
    helper.make_node("ScatterElements", ["se_data", "se_index", "se_update"],
                     ["se_mul"], axis=1, reduction="mul"),
    helper.make_node("ScatterND", ["nd_data", "nd_index", "nd_update"],
                     ["nd_slices"]),
    helper.make_node("ScatterND", ["nd_data", "nd_point_index",
                                   "nd_point_update"], ["nd_points_added"],
                     reduction="add"),
    helper.make_node("ScatterND", ["cache", "cache_index", "cache_update"],
                     ["cache_updated"])]
types = {np.int32: I32, np.int64: I64, np.float16: H, np.float32: F}
inputs = [value(name, types[array.dtype.type], list(array.shape))
          for name, array in feeds.items()]
shapes = {"se_none": [3, 5, 2], "se_add": [3, 5, 2], "se_mul": [3, 5, 2],
          "nd_slices": [4, 3, 2], "nd_points_added": [4, 3, 2],
          "cache_updated": [2, 3, 6, 4]}
save("scatter", nodes, inputs,
     [value(name, I32 if name.startswith("se") else
            H if name.startswith("nd") else F, dims)
      for name, dims in shapes.items()], 16)
write_tensors("scatter", list(feeds.values()), reference("scatter", feeds))


# newer_opsets: ops and versions of opsets 18-26 (ONNX 1.23) in one model
# at opset 26: a decoder block (RMSNormalization, RotaryEmbedding on 3-D Q
# and K, Attention with grouped KV heads and a causal mask, Gelu, Swish),
# the reductions' axes input (18), Split's num_outputs (18), Pad's axes
# and wrap mode (18, 19), GroupNormalization's per-channel scale (21), a
# circular TensorScatter (24), Resize's axes and antialias (18), a max
# ScatterElements (18), an exclusive CumProd (26) and CenterCropPad (18);
# against onnx.reference.
rng = np.random.default_rng(62)
hidden, heads, kv_heads, size = 16, 4, 2, 4
feeds = {
    "x": rng.uniform(-1, 1, [2, 5, hidden]).astype(np.float32),
    "positions": np.array([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]], np.int64),
    "groups_in": rng.uniform(-2, 2, [2, 6, 3]).astype(np.float32),
    "cache": rng.uniform(-1, 1, [2, 8, 4]).astype(np.float32),
    "cache_update": rng.uniform(-1, 1, [2, 3, 4]).astype(np.float32),
    "write_at": np.array([2, 6], np.int64),
    "image": rng.uniform(0, 1, [1, 2, 6, 9]).astype(np.float32),
    "scatter_index": np.array([[1, 1, 0], [2, 0, 2]], np.int64),
    "scatter_update": rng.uniform(-1, 1, [2, 3]).astype(np.float32)}
angles = np.outer(np.arange(8), 1.0 / 10000 ** (np.arange(size // 2) / 2))
initializers = [
    numpy_helper.from_array(rng.uniform(0.5, 1.5, [hidden]).astype(
        np.float32), "norm_scale"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, [hidden, hidden]).astype(
        np.float32), "wq"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, [hidden, kv_heads * size])
                            .astype(np.float32), "wk"),
    numpy_helper.from_array(rng.uniform(-0.5, 0.5, [hidden, kv_heads * size])
                            .astype(np.float32), "wv"),
    numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos_cache"),
    numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin_cache"),
    numpy_helper.from_array(np.array([-1], np.int64), "last_axis"),
    numpy_helper.from_array(np.array([1, 2], np.int64), "wrap_pads"),
    numpy_helper.from_array(np.array([2], np.int64), "wrap_axes"),
    numpy_helper.from_array(rng.uniform(0.5, 1.5, [6]).astype(np.float32),
                            "group_scale"),
    numpy_helper.from_array(rng.uniform(-1, 1, [6]).astype(np.float32),
                            "group_bias"),
    numpy_helper.from_array(np.array([0.5, 0.6], np.float32), "scales_2d"),
    numpy_helper.from_array(np.array(1, np.int64), "axis_one"),
    numpy_helper.from_array(np.array([4, 11], np.int64), "crop_shape")]
nodes = [
    helper.make_node("RMSNormalization", ["x", "norm_scale"], ["normed"]),
    helper.make_node("MatMul", ["normed", "wq"], ["q"]),
    helper.make_node("MatMul", ["normed", "wk"], ["k"]),
    helper.make_node("MatMul", ["normed", "wv"], ["v"]),
    helper.make_node("RotaryEmbedding",
                     ["q", "cos_cache", "sin_cache", "positions"], ["q_rot"],
                     num_heads=heads),
    helper.make_node("RotaryEmbedding",
                     ["k", "cos_cache", "sin_cache", "positions"], ["k_rot"],
                     num_heads=kv_heads, interleaved=1),
    helper.make_node("Attention", ["q_rot", "k_rot", "v"], ["attended"],
                     q_num_heads=heads, kv_num_heads=kv_heads, is_causal=1),
    helper.make_node("Gelu", ["attended"], ["gelu"], approximate="tanh"),
    helper.make_node("Swish", ["gelu"], ["swish"], alpha=0.5),
    helper.make_node("ReduceMean", ["swish", "last_axis"], ["row_mean"]),
    helper.make_node("Split", ["swish"], ["part0", "part1", "part2"], axis=2,
                     num_outputs=3),
    helper.make_node("Pad", ["part2", "wrap_pads", "", "wrap_axes"],
                     ["wrapped"], mode="wrap"),
    helper.make_node("GroupNormalization",
                     ["groups_in", "group_scale", "group_bias"], ["grouped"],
                     num_groups=3),
    helper.make_node("TensorScatter", ["cache", "cache_update", "write_at"],
                     ["cache_written"], axis=1, mode="circular"),
    helper.make_node("Resize", ["image", "", "scales_2d"], ["resized"],
                     mode="linear", antialias=1, axes=[3, 2]),
    helper.make_node("ScatterElements",
                     ["scatter_update", "scatter_index", "scatter_update"],
                     ["scatter_max"], axis=1, reduction="max"),
    helper.make_node("CumProd", ["groups_in", "axis_one"], ["cumprod"],
                     exclusive=1),
    helper.make_node("CenterCropPad", ["image", "crop_shape"], ["cropped"],
                     axes=[2, 3])]
types = {np.int64: I64, np.float32: F}
inputs = [value(name, types[array.dtype.type], list(array.shape))
          for name, array in feeds.items()]
shapes = {"swish": [2, 5, 16], "row_mean": [2, 5, 1], "part0": [2, 5, 6],
          "part1": [2, 5, 6], "wrapped": [2, 5, 7], "grouped": [2, 6, 3],
          "cache_written": [2, 8, 4], "resized": [1, 2, 3, 4],
          "scatter_max": [2, 3], "cumprod": [2, 6, 3],
          "cropped": [1, 2, 4, 11]}
save("newer_opsets", nodes, inputs,
     [value(name, F, dims) for name, dims in shapes.items()], 26,
     initializers)
write_tensors("newer_opsets", list(feeds.values()),
              reference("newer_opsets", feeds))


# top_k: TopK largest and smallest over NaN, infinities, signed zeros and
# ties (lower index first), along the last axis and axis 0, and over
# int32; against onnx.reference (a stable NumPy sort).
x = np.array([[3.0, np.nan, -0.0, 0.0, 3.0, -np.inf, 7.5, np.nan],
              [1.0, 1.0, 1.0, np.inf, -2.0, 0.0, -0.0, 5.0],
              [np.nan, np.nan, -1.0, 2.0, 2.0, 2.0, -3.0, 4.0]], np.float32)
n = rng.integers(-5, 5, [4, 6]).astype(np.int32)
feeds = {"x": x, "n": n}
initializers = [numpy_helper.from_array(np.array([5], np.int64), "five"),
                numpy_helper.from_array(np.array([2], np.int64), "two"),
                numpy_helper.from_array(np.array([3], np.int64), "three")]
nodes = [
    helper.make_node("TopK", ["x", "five"], ["largest_values",
                                             "largest_indices"]),
    helper.make_node("TopK", ["x", "five"], ["smallest_values",
                                             "smallest_indices"], largest=0),
    helper.make_node("TopK", ["x", "two"], ["column_values",
                                            "column_indices"], axis=0),
    helper.make_node("TopK", ["n", "three"], ["int_values", "int_indices"],
                     axis=-1, largest=0)]
save("top_k", nodes, [value("x", F, [3, 8]), value("n", I32, [4, 6])],
     [value("largest_values", F, [3, 5]), value("largest_indices", I64, [3, 5]),
      value("smallest_values", F, [3, 5]),
      value("smallest_indices", I64, [3, 5]),
      value("column_values", F, [2, 8]), value("column_indices", I64, [2, 8]),
      value("int_values", I32, [4, 3]), value("int_indices", I64, [4, 3])],
     17, initializers)
write_tensors("top_k", [x, n], reference("top_k", feeds))


# old_opset_attributes: opset 6's attribute forms, against their specs in
# NumPy (onnx.reference does not broadcast from an axis): Add and Pow with
# broadcast = 1 and axis, Pad-2 (pads and value attributes; reflect),
# Clip-6 (min and max attributes; one left out), Slice-1 (starts, ends,
# axes attributes).
a = rng.uniform(-2, 2, [2, 3, 4]).astype(np.float32)
b = rng.uniform(0.5, 2, [3]).astype(np.float32)
nodes = [helper.make_node("Add", ["a", "b"], ["axis_sum"], broadcast=1,
                          axis=1),
         helper.make_node("Pow", ["b_pos", "b"], ["axis_pow"], broadcast=1,
                          axis=1),
         helper.make_node("Pad", ["a"], ["padded"], pads=[0, 1, 2, 0, 0, 1],
                          value=1.5),
         helper.make_node("Pad", ["a"], ["reflected"], mode="reflect",
                          pads=[0, 0, 2, 0, 0, 1]),
         helper.make_node("Clip", ["a"], ["clipped"], min=-0.5, max=1.0),
         helper.make_node("Clip", ["a"], ["floored"], min=0.25),
         helper.make_node("Slice", ["a"], ["sliced"], starts=[1, -3],
                          ends=[3, 1000], axes=[1, 2])]
b_pos = np.abs(rng.uniform(0.5, 2, [2, 3, 4])).astype(np.float32)
save("old_opset_attributes", nodes,
     [value("a", F, [2, 3, 4]), value("b", F, [3]),
      value("b_pos", F, [2, 3, 4])],
     [value("axis_sum", F, [2, 3, 4]), value("axis_pow", F, [2, 3, 4]),
      value("padded", F, [2, 4, 7]), value("reflected", F, [2, 3, 7]),
      value("clipped", F, [2, 3, 4]), value("floored", F, [2, 3, 4]),
      value("sliced", F, [2, 2, 3])], 6)
column = b.reshape(1, 3, 1)
write_tensors("old_opset_attributes", [a, b, b_pos], [
    a + column, np.power(b_pos, column),
    np.pad(a, [(0, 0), (1, 0), (2, 1)], constant_values=1.5),
    np.pad(a, [(0, 0), (0, 0), (2, 1)], mode="reflect"),
    np.clip(a, -0.5, 1.0), np.maximum(a, np.float32(0.25)), a[:, 1:3, -3:]])


# grid_sample: GridSample's modes and padding modes, 2-D and 3-D, with grid
# points beyond the border; against onnx.reference.
image = rng.uniform(-1, 1, [2, 3, 4, 5]).astype(np.float32)
volume = rng.uniform(-1, 1, [1, 2, 3, 4, 3]).astype(np.float32)
grid2 = rng.uniform(-2.5, 2.5, [2, 3, 4, 2]).astype(np.float32)
grid3 = rng.uniform(-2.5, 2.5, [1, 2, 3, 2, 3]).astype(np.float32)
feeds = {"image": image, "volume": volume, "grid2": grid2, "grid3": grid3}
nodes = [
    helper.make_node("GridSample", ["image", "grid2"], ["cubic_reflection"],
                     mode="cubic", padding_mode="reflection"),
    helper.make_node("GridSample", ["image", "grid2"], ["linear_border"],
                     mode="linear", padding_mode="border", align_corners=1),
    helper.make_node("GridSample", ["image", "grid2"], ["nearest_zeros"],
                     mode="nearest"),
    helper.make_node("GridSample", ["volume", "grid3"], ["volume_linear"],
                     mode="linear", padding_mode="reflection"),
    helper.make_node("GridSample", ["volume", "grid3"], ["volume_nearest"],
                     mode="nearest", padding_mode="border", align_corners=1)]
save("grid_sample", nodes,
     [value(name, F, list(array.shape)) for name, array in feeds.items()],
     [value("cubic_reflection", F, [2, 3, 3, 4]),
      value("linear_border", F, [2, 3, 3, 4]),
      value("nearest_zeros", F, [2, 3, 3, 4]),
      value("volume_linear", F, [1, 2, 2, 3, 2]),
      value("volume_nearest", F, [1, 2, 2, 3, 2])], 22)
write_tensors("grid_sample", list(feeds.values()),
              reference("grid_sample", feeds))


# recurrent: LSTM (bidirectional, biases, initial states, peepholes), GRU
# (reverse, batch-first layout, linear_before_reset) and RNN (forward),
# unrolled over 4 steps; against onnx.reference.
def uniform(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


steps, batch, size, hidden = 4, 2, 3, 5
feeds = {"seq": uniform(steps, batch, size),
         "seq_bf": uniform(batch, steps, size),
         "lw": uniform(2, 4 * hidden, size), "lr": uniform(2, 4 * hidden, hidden),
         "lb": uniform(2, 8 * hidden), "lh": uniform(2, batch, hidden),
         "lc": uniform(2, batch, hidden), "lp": uniform(2, 3 * hidden),
         "gw": uniform(1, 3 * hidden, size), "gr": uniform(1, 3 * hidden, hidden),
         "gb": uniform(1, 6 * hidden), "gh": uniform(batch, 1, hidden),
         "rw": uniform(1, hidden, size), "rr": uniform(1, hidden, hidden)}
nodes = [
    helper.make_node("LSTM", ["seq", "lw", "lr", "lb", "", "lh", "lc", "lp"],
                     ["lstm_y", "lstm_h", "lstm_c"], direction="bidirectional",
                     hidden_size=hidden),
    helper.make_node("GRU", ["seq_bf", "gw", "gr", "gb", "", "gh"],
                     ["gru_y", "gru_h"], direction="reverse", layout=1,
                     linear_before_reset=1, hidden_size=hidden),
    helper.make_node("RNN", ["seq", "rw", "rr"], ["", "rnn_h"],
                     hidden_size=hidden)]
save("recurrent", nodes,
     [value(name, F, list(array.shape)) for name, array in feeds.items()],
     [value("lstm_y", F, [steps, 2, batch, hidden]),
      value("lstm_h", F, [2, batch, hidden]),
      value("lstm_c", F, [2, batch, hidden]),
      value("gru_y", F, [batch, steps, 1, hidden]),
      value("gru_h", F, [batch, 1, hidden]),
      value("rnn_h", F, [1, batch, hidden])], 22)
write_tensors("recurrent", list(feeds.values()),
              reference("recurrent", feeds))


# narrow_dtypes: weight-only linears of float8 (E4M3FN, per output
# channel) and packed int4 (with zero points) weights, QuantizeLinear to
# float8 E5M2 without saturation and to uint4, and casts through float8
# E4M3FNUZ and float4 E2M1 (transposed in between); against onnx.reference
# (ml_dtypes' conversions).
import ml_dtypes

rng = np.random.default_rng(23)
x = (rng.standard_normal((4, 16)) * 3).astype(np.float32)
x[0, :6] = [0.0, -0.0, 1e6, -1e6, np.nan, 0.0009]
feeds = {"x": x}
w8 = (rng.standard_normal((16, 8)) * 40).astype(ml_dtypes.float8_e4m3fn)
w4 = rng.integers(-8, 8, (16, 8)).astype(ml_dtypes.int4)
initializers = [
    numpy_helper.from_array(w8, "w8"),
    numpy_helper.from_array(
        (rng.random(8) * 0.05 + 0.01).astype(np.float32), "w8_scale"),
    numpy_helper.from_array(w4, "w4"),
    numpy_helper.from_array(
        (rng.random(8) * 0.2 + 0.05).astype(np.float32), "w4_scale"),
    numpy_helper.from_array(
        rng.integers(-2, 3, 8).astype(ml_dtypes.int4), "w4_zero"),
    numpy_helper.from_array(np.array(0.25, np.float32), "x_scale"),
    numpy_helper.from_array(np.array(0, ml_dtypes.float8_e5m2), "e5m2_zero"),
    numpy_helper.from_array(np.array(7, ml_dtypes.uint4), "u4_zero")]
nodes = [
    helper.make_node("DequantizeLinear", ["w8", "w8_scale"], ["w8_f32"],
                     axis=1),
    helper.make_node("MatMul", ["x", "w8_f32"], ["linear_f8"]),
    helper.make_node("DequantizeLinear", ["w4", "w4_scale", "w4_zero"],
                     ["w4_f32"], axis=1),
    helper.make_node("MatMul", ["x", "w4_f32"], ["linear_i4"]),
    helper.make_node("QuantizeLinear", ["x", "x_scale", "e5m2_zero"],
                     ["x_e5m2"], saturate=0),
    helper.make_node("QuantizeLinear", ["x", "x_scale", "u4_zero"],
                     ["x_u4"]),
    helper.make_node("Cast", ["x"], ["x_fnuz"],
                     to=TensorProto.FLOAT8E4M3FNUZ),
    helper.make_node("Cast", ["x_fnuz"], ["fnuz_f16"], to=F16),
    helper.make_node("Cast", ["x"], ["x_f4"], to=TensorProto.FLOAT4E2M1),
    helper.make_node("Transpose", ["x_f4"], ["x_f4_t"]),
    helper.make_node("Cast", ["x_f4_t"], ["f4_t_f32"], to=F)]
save("narrow_dtypes", nodes, [value("x", F, [4, 16])],
     [value("linear_f8", F, [4, 8]), value("linear_i4", F, [4, 8]),
      value("x_e5m2", TensorProto.FLOAT8E5M2, [4, 16]),
      value("x_u4", TensorProto.UINT4, [4, 16]),
      value("fnuz_f16", F16, [4, 16]), value("f4_t_f32", F, [16, 4])], 23,
     initializers)
write_tensors("narrow_dtypes", list(feeds.values()),
              reference("narrow_dtypes", feeds))


# batchnorm_reverse_affine: BatchNormalization in training mode (batch
# statistics; running mean and variance outputs, f32 and f16), ReverseSequence
# along either layout (lengths past the time dim and negative, as NumPy
# slices them), AffineGrid 2-D and 3-D with and without align_corners
# (size a constant, as fusec's static shapes need; 37 x 7, where NumPy's
# arange steps show); against onnx.reference.
rng = np.random.default_rng(29)
feeds = {"bn_x": rng.standard_normal((3, 4, 2, 5)).astype(np.float32),
         "seq_tb": rng.standard_normal((5, 3, 2)).astype(np.float32),
         "seq_bt": rng.integers(-9, 9, (3, 5)).astype(np.int32),
         "lens": np.array([7, -2, 3], np.int64),
         "theta2": rng.standard_normal((2, 2, 3)).astype(np.float32),
         "theta3": rng.standard_normal((1, 3, 4)).astype(np.float32)}
initializers = [
    numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "bn_s"),
    numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "bn_b"),
    numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "bn_m"),
    numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "bn_v"),
    numpy_helper.from_array(np.array([2, 1, 37, 7], np.int64), "size2"),
    numpy_helper.from_array(np.array([1, 1, 2, 3, 4], np.int64), "size3")]
nodes = [
    helper.make_node("BatchNormalization",
                     ["bn_x", "bn_s", "bn_b", "bn_m", "bn_v"],
                     ["bn_y", "bn_running_mean", "bn_running_var"],
                     training_mode=1, momentum=0.8, epsilon=1e-3),
    helper.make_node("ReverseSequence", ["seq_tb", "lens"], ["reversed_tb"]),
    helper.make_node("ReverseSequence", ["seq_bt", "lens"], ["reversed_bt"],
                     batch_axis=0, time_axis=1),
    helper.make_node("AffineGrid", ["theta2", "size2"], ["grid2"]),
    helper.make_node("AffineGrid", ["theta2", "size2"], ["grid2_corners"],
                     align_corners=1),
    helper.make_node("AffineGrid", ["theta3", "size3"], ["grid3"]),
    helper.make_node("AffineGrid", ["theta3", "size3"], ["grid3_corners"],
                     align_corners=1)]
elem = {np.float32: F, np.float16: F16, np.int32: I32, np.int64: I64}
save("batchnorm_reverse_affine", nodes,
     [value(name, elem[array.dtype.type], list(array.shape))
      for name, array in feeds.items()],
     [value("bn_y", F, [3, 4, 2, 5]), value("bn_running_mean", F, [4]),
      value("bn_running_var", F, [4]),
      value("reversed_tb", F, [5, 3, 2]), value("reversed_bt", I32, [3, 5]),
      value("grid2", F, [2, 37, 7, 2]),
      value("grid2_corners", F, [2, 37, 7, 2]),
      value("grid3", F, [1, 2, 3, 4, 3]),
      value("grid3_corners", F, [1, 2, 3, 4, 3])], 20, initializers)
write_tensors("batchnorm_reverse_affine", list(feeds.values()),
              reference("batchnorm_reverse_affine", feeds))


# batchnorm_f16_training: BatchNormalization in training mode on f16. The
# reference computes scale * (x - mean) in f16 and the rest in f32 (its f32
# epsilon widens it), as fusec does, but its batch variance is NumPy's f16
# var, whose rounding fusec's (f32, rounded once to f16) does not follow:
# within 2 f16 ulps of 1 (atol 2e-3).
rng = np.random.default_rng(31)
feeds = {"x16": rng.standard_normal((2, 3, 6)).astype(np.float16)}
initializers = [
    numpy_helper.from_array(np.array([1, 0.5, 2], np.float16), "s16"),
    numpy_helper.from_array(np.array([0, 0.25, -1], np.float16), "b16"),
    numpy_helper.from_array(np.array([0.5, 0, -0.5], np.float16), "m16"),
    numpy_helper.from_array(np.array([1, 2, 0.5], np.float16), "v16")]
initializers += [
    numpy_helper.from_array(np.array([1, 0.3, 2], np.float32), "s32"),
    numpy_helper.from_array(np.array([0.1, 0.25, -1], np.float32), "b32"),
    numpy_helper.from_array(np.array([0.3, 0, -0.7], np.float32), "m32"),
    numpy_helper.from_array(np.array([1, 2.5, 0.5], np.float32), "v32")]
save("batchnorm_f16_training",
     [helper.make_node("BatchNormalization",
                       ["x16", "s16", "b16", "m16", "v16"],
                       ["y16", "running_mean16", "running_var16"],
                       training_mode=1),
      # Inference with f32 parameters: x - mean in f32 (NumPy promotes).
      helper.make_node("BatchNormalization",
                       ["x16", "s32", "b32", "m32", "v32"], ["y16_f32_params"])],
     [value("x16", F16, [2, 3, 6])],
     [value("y16", F16, [2, 3, 6]), value("running_mean16", F16, [3]),
      value("running_var16", F16, [3]),
      value("y16_f32_params", F16, [2, 3, 6])], 15, initializers)
write_tensors("batchnorm_f16_training", list(feeds.values()),
              reference("batchnorm_f16_training", feeds))


# maxpool_indices: MaxPool's Indices output (2-D with pads, dilations and
# ceil_mode, ties and -inf in a window, column-major storage_order; 1-D;
# 3-D), against onnx.reference (the first greatest position of each window
# in order). The u8 pool gives no indices here: onnx.reference's u8 indices
# name positions outside their windows (3 for a window of 0, 1, 5, 6).
rng = np.random.default_rng(37)
x2 = rng.integers(-3, 4, (2, 3, 7, 6)).astype(np.float32)
x2[0, 0, :2, :2] = -np.inf
feeds = {"x2": x2,
         "x1": rng.standard_normal((1, 2, 9)).astype(np.float32),
         "x3": rng.standard_normal((1, 1, 4, 5, 3)).astype(np.float32),
         "xu8": rng.integers(0, 4, (1, 2, 5, 5)).astype(np.uint8)}
nodes = [
    helper.make_node("MaxPool", ["x2"], ["p2", "i2"], kernel_shape=[3, 2],
                     pads=[1, 0, 1, 1], strides=[2, 1], dilations=[1, 2],
                     ceil_mode=1),
    helper.make_node("MaxPool", ["x2"], ["p2c", "i2c"], kernel_shape=[2, 2],
                     strides=[2, 2], storage_order=1),
    helper.make_node("MaxPool", ["x1"], ["p1", "i1"], kernel_shape=[3],
                     strides=[2], pads=[1, 1]),
    helper.make_node("MaxPool", ["x3"], ["p3", "i3"], kernel_shape=[2, 2, 2],
                     strides=[1, 2, 1]),
    helper.make_node("MaxPool", ["xu8"], ["pu8"], kernel_shape=[2, 2])]
save("maxpool_indices", nodes,
     [value("x2", F, [2, 3, 7, 6]), value("x1", F, [1, 2, 9]),
      value("x3", F, [1, 1, 4, 5, 3]), value("xu8", TensorProto.UINT8,
                                             [1, 2, 5, 5])],
     [value("p2", F, [2, 3, 4, 5]), value("i2", I64, [2, 3, 4, 5]),
      value("p2c", F, [2, 3, 3, 3]), value("i2c", I64, [2, 3, 3, 3]),
      value("p1", F, [1, 2, 5]), value("i1", I64, [1, 2, 5]),
      value("p3", F, [1, 1, 3, 2, 2]), value("i3", I64, [1, 1, 3, 2, 2]),
      value("pu8", TensorProto.UINT8, [1, 2, 4, 4])], 12)
write_tensors("maxpool_indices", list(feeds.values()),
              reference("maxpool_indices", feeds))


# converted_types: values whose shape and dtype ONNX 1.12's inference (the
# libonnx fusec links) does not give, here an opset-24 Pad with axes: fusec
# types them from the fuse ops they became. CastLike reads the padded
# value's dtype, Shape its shape (folded, then gathered into a Reshape's
# shape); Max folds over two shapes (CenterCropPad's expansion).
rng = np.random.default_rng(41)
feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32),
         "mask": rng.integers(0, 2, (2, 6)).astype(np.bool_)}
initializers = [
    numpy_helper.from_array(np.array([1, 2], np.int64), "pads"),
    numpy_helper.from_array(np.array(-np.inf, np.float32), "fill"),
    numpy_helper.from_array(np.array([-1], np.int64), "last"),
    numpy_helper.from_array(np.array([1, 0], np.int64), "swap"),
    numpy_helper.from_array(np.array([4, 6], np.int64), "at_least")]
nodes = [
    helper.make_node("Pad", ["x", "pads", "fill", "last"], ["padded"]),
    helper.make_node("CastLike", ["mask", "padded"], ["mask_f"]),
    helper.make_node("Add", ["padded", "mask_f"], ["masked"]),
    helper.make_node("Shape", ["padded"], ["padded_shape"]),
    helper.make_node("Gather", ["padded_shape", "swap"], ["swapped"]),
    helper.make_node("Reshape", ["masked", "swapped"], ["reshaped"]),
    helper.make_node("Max", ["padded_shape", "at_least"], ["bigger"]),
    helper.make_node("Sub", ["bigger", "padded_shape"], ["growth"]),
    helper.make_node("Concat", ["growth", "growth"], ["more_pads"], axis=0),
    helper.make_node("Pad", ["masked", "more_pads"], ["grown"])]
save("converted_types", nodes,
     [value("x", F, [2, 3]), value("mask", TensorProto.BOOL, [2, 6])],
     [value("reshaped", F, [6, 2]), value("grown", F, [6, 6])], 24,
     initializers)
write_tensors("converted_types", list(feeds.values()),
              reference("converted_types", feeds))


def runtime_reference(name, feeds):
    """onnxruntime's outputs for `feeds`: onnx.reference has no reversed
    Scan directions."""
    import onnxruntime
    session = onnxruntime.InferenceSession(name + ".onnx",
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


# control_flow: If, Loop and Scan, unrolled (expected outputs from
# onnxruntime). If with a cond computed at run
# time (both branches converted, each output selected; the branches reuse
# value names, a nested If inside one), and with a cond folded from a
# static shape (only the taken branch); Loop with a trip count and a
# condition from constants, a loop-carried value and a scan output, its
# body reading an outer value; Scan with two states, a reversed scan
# input along axis 1 and a reversed scan output along axis 1.
def branch(name, nodes, outputs, initializers=()):
    return helper.make_graph(nodes, name, [], outputs, list(initializers))


rng = np.random.default_rng(43)
feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32),
         "flag": np.array(False),
         "seq": rng.standard_normal((2, 5, 3)).astype(np.float32)}
inner_if = helper.make_node(
    "If", ["flag"], ["nested"],
    then_branch=branch("inner_then", [
        helper.make_node("Neg", ["x"], ["t"])], [value("t", F, [3, 4])]),
    else_branch=branch("inner_else", [
        helper.make_node("Abs", ["x"], ["t"])], [value("t", F, [3, 4])]))
runtime_if = helper.make_node(
    "If", ["flag"], ["chosen", "same"],
    then_branch=branch("then", [
        helper.make_node("Mul", ["x", "two"], ["t"]),
        helper.make_node("Identity", ["x"], ["u"])],
        [value("t", F, [3, 4]), value("u", F, [3, 4])],
        [numpy_helper.from_array(np.array(2, np.float32), "two")]),
    else_branch=branch("else", [
        inner_if, helper.make_node("Add", ["nested", "x"], ["t"]),
        helper.make_node("Identity", ["x"], ["u"])],
        [value("t", F, [3, 4]), value("u", F, [3, 4])]))
# cond folded from Size(x) == 12: the else branch would not convert (its
# Reshape does not fit 12 elements) and is never looked at.
static_if = helper.make_node(
    "If", ["is_twelve"], ["static_chosen"],
    then_branch=branch("static_then", [
        helper.make_node("Reshape", ["x", "to_2x6"], ["t"])],
        [value("t", F, [2, 6])],
        [numpy_helper.from_array(np.array([2, 6], np.int64), "to_2x6")]),
    else_branch=branch("static_else", [
        helper.make_node("Reshape", ["x", "to_5x5"], ["t"])],
        [value("t", F, [5, 5])],
        [numpy_helper.from_array(np.array([5, 5], np.int64), "to_5x5")]))
loop_body = helper.make_graph(
    [helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
     helper.make_node("Mul", ["acc_in", "x"], ["scaled"]),
     helper.make_node("Add", ["scaled", "i_f"], ["acc_out"]),
     helper.make_node("Less", ["i", "stop_at"], ["keep_going"]),
     helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0)],
    "loop_body",
    [value("i", I64, []), value("cond_in", TensorProto.BOOL, []),
     value("acc_in", F, [3, 4])],
    [value("keep_going", TensorProto.BOOL, []), value("acc_out", F, [3, 4]),
     value("total", F, [])])
scan_body = helper.make_graph(
    [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
     helper.make_node("Max", ["max_in", "row"], ["max_out"]),
     helper.make_node("Mul", ["sum_out", "row"], ["emitted"])],
    "scan_body",
    [value("sum_in", F, [2, 3]), value("max_in", F, [2, 3]),
     value("row", F, [2, 3])],
    [value("sum_out", F, [2, 3]), value("max_out", F, [2, 3]),
     value("emitted", F, [2, 3])])
initializers = [
    numpy_helper.from_array(np.array(12, np.int64), "twelve"),
    numpy_helper.from_array(np.array(10, np.int64), "trips"),
    numpy_helper.from_array(np.array(True), "start"),
    numpy_helper.from_array(np.array(2, np.int64), "stop_at"),
    numpy_helper.from_array(np.ones((3, 4), np.float32), "acc0"),
    numpy_helper.from_array(np.zeros((2, 3), np.float32), "sum0"),
    numpy_helper.from_array(np.full((2, 3), -np.inf, np.float32), "max0")]
nodes = [
    runtime_if,
    helper.make_node("Size", ["x"], ["size"]),
    helper.make_node("Equal", ["size", "twelve"], ["is_twelve"]),
    static_if,
    helper.make_node("Loop", ["trips", "start", "acc0"],
                     ["acc", "totals"], body=loop_body),
    helper.make_node("Scan", ["sum0", "max0", "seq"],
                     ["sum", "max", "emitted_all"], body=scan_body,
                     num_scan_inputs=1, scan_input_axes=[1],
                     scan_input_directions=[1], scan_output_axes=[1],
                     scan_output_directions=[1])]
save("control_flow", nodes,
     [value("x", F, [3, 4]), value("flag", TensorProto.BOOL, []),
      value("seq", F, [2, 5, 3])],
     [value("chosen", F, [3, 4]), value("same", F, [3, 4]),
      value("static_chosen", F, [2, 6]), value("acc", F, [3, 4]),
      value("totals", F, [3]), value("sum", F, [2, 3]),
      value("max", F, [2, 3]), value("emitted_all", F, [2, 5, 3])], 17,
     initializers)
write_tensors("control_flow", list(feeds.values()),
              runtime_reference("control_flow", feeds))
# The same with flag true: the other side of each runtime select.
feeds["flag"] = np.array(True)
write_tensors("control_flow_flag_true", list(feeds.values()),
              runtime_reference("control_flow", feeds))


# control_flow_errors: what cannot be unrolled with static shapes: an If
# whose cond is computed at run time and whose branches give different
# shapes; a Loop whose condition is a graph input (its trip count is not
# known); a Scan body that does not take its states and slices.
nodes = [
    helper.make_node(
        "If", ["flag"], ["shapes_differ"],
        then_branch=branch("then", [
            helper.make_node("Identity", ["x"], ["t"])],
            [value("t", F, [3, 4])]),
        else_branch=branch("else", [
            helper.make_node("Transpose", ["x"], ["t"])],
            [value("t", F, [4, 3])])),
    helper.make_node("Loop", ["", "flag", "x"], ["looped"],
                     body=helper.make_graph(
                         [helper.make_node("Identity", ["c"], ["c_out"]),
                          helper.make_node("Neg", ["v"], ["v_out"])],
                         "body",
                         [value("i", I64, []),
                          value("c", TensorProto.BOOL, []),
                          value("v", F, [3, 4])],
                         [value("c_out", TensorProto.BOOL, []),
                          value("v_out", F, [3, 4])])),
    helper.make_node("Scan", ["x"], ["scanned"], num_scan_inputs=1,
                     body=helper.make_graph(
                         [helper.make_node("Neg", ["a"], ["b"])], "body",
                         [value("a", F, [4]), value("extra", F, [4])],
                         [value("b", F, [4])]))]
save("control_flow_errors", nodes,
     [value("x", F, [3, 4]), value("flag", TensorProto.BOOL, [])],
     [value("shapes_differ", F, [3, 4]), value("looped", F, [3, 4]),
      value("scanned", F, [3, 4])], 17)


# recurrent_state_ops: opset 27's ops for linear-attention and state-space
# models, against onnx.reference: CausalConvWithState with a bias, a past
# state and SiLU, and without a past state (zeros); LinearAttention's
# gated_delta rule with grouped query heads (4 query heads over 2 KV heads),
# per-key-dim decay, a past state and an explicit scale, and its linear rule
# on f16 without a past state.
rng = np.random.default_rng(47)
feeds = {"signal": rng.standard_normal((2, 3, 6)).astype(np.float32),
         "conv_state": rng.standard_normal((2, 3, 2)).astype(np.float32),
         "q": rng.standard_normal((1, 3, 4 * 2)).astype(np.float32),
         "k": (rng.standard_normal((1, 3, 2 * 2)) / 2).astype(np.float32),
         "v": rng.standard_normal((1, 3, 2 * 3)).astype(np.float32),
         "attention_state": rng.standard_normal((1, 2, 2, 3)).astype(
             np.float32),
         "decay": -np.abs(rng.standard_normal((1, 3, 2 * 2))).astype(
             np.float32),
         "beta": rng.uniform(0, 1, (1, 3, 2)).astype(np.float32),
         "q16": rng.standard_normal((2, 2, 4)).astype(np.float16),
         "k16": rng.standard_normal((2, 2, 4)).astype(np.float16),
         "v16": rng.standard_normal((2, 2, 2)).astype(np.float16)}
initializers = [
    numpy_helper.from_array(rng.standard_normal((3, 1, 3)).astype(np.float32),
                            "conv_weight"),
    numpy_helper.from_array(np.array([0.5, -1, 0.25], np.float32),
                            "conv_bias")]
nodes = [
    helper.make_node("CausalConvWithState",
                     ["signal", "conv_weight", "conv_bias", "conv_state"],
                     ["conv_out", "conv_present"], activation="silu"),
    helper.make_node("CausalConvWithState", ["signal", "conv_weight"],
                     ["conv_plain", "conv_plain_present"]),
    helper.make_node("LinearAttention",
                     ["q", "k", "v", "attention_state", "decay", "beta"],
                     ["attended", "attention_present"], q_num_heads=4,
                     kv_num_heads=2, scale=0.75, update_rule="gated_delta"),
    helper.make_node("LinearAttention", ["q16", "k16", "v16"],
                     ["attended16", "attention_present16"], q_num_heads=2,
                     kv_num_heads=2, update_rule="linear")]
elem = {np.float32: F, np.float16: F16}
save("recurrent_state_ops", nodes,
     [value(name, elem[array.dtype.type], list(array.shape))
      for name, array in feeds.items()],
     [value("conv_out", F, [2, 3, 6]), value("conv_present", F, [2, 3, 2]),
      value("conv_plain", F, [2, 3, 6]),
      value("conv_plain_present", F, [2, 3, 2]),
      value("attended", F, [1, 3, 12]),
      value("attention_present", F, [1, 2, 2, 3]),
      value("attended16", F16, [2, 2, 2]),
      value("attention_present16", F16, [2, 2, 2, 1])], 27, initializers)
write_tensors("recurrent_state_ops", list(feeds.values()),
              reference("recurrent_state_ops", feeds))


# recurrent_state_errors: an unknown activation; a gated rule without its
# decay; query heads not a multiple of the KV heads (saved unchecked: the
# checker's inference refuses the last two).
nodes = [
    helper.make_node("CausalConvWithState", ["signal", "conv_weight"],
                     ["bad_activation", "s0"], activation="gelu"),
    helper.make_node("LinearAttention", ["q", "k", "v"], ["no_decay", "s1"],
                     q_num_heads=4, kv_num_heads=2, update_rule="gated"),
    helper.make_node("LinearAttention", ["q", "k", "v"], ["bad_heads", "s2"],
                     q_num_heads=4, kv_num_heads=3, update_rule="linear")]
onnx.save(helper.make_model(
    helper.make_graph(
        nodes, "recurrent_state_errors",
        [value("signal", F, [2, 3, 6]), value("q", F, [1, 3, 8]),
         value("k", F, [1, 3, 4]), value("v", F, [1, 3, 6])],
        [value("bad_activation", F, [2, 3, 6]),
         value("no_decay", F, [1, 3, 12]), value("bad_heads", F, [1, 3, 12])],
        [numpy_helper.from_array(np.ones((3, 1, 3), np.float32),
                                 "conv_weight")]),
    producer_name="fusec", opset_imports=[helper.make_opsetid("", 27)]),
    "recurrent_state_errors.onnx")


# blocked_quantization: block_size (opset 21) as int4 weight-only models
# use it: int4 weights [10, 6] with a scale and zero point per block of 4
# along K (3 blocks, the last cut to 2) dequantized into a MatMul; a
# QuantizeLinear to uint4 in blocks of 2 along axis 0 (a remainder block
# too) and one to int8 without a zero point; a DequantizeLinear of one
# block spanning the axis. Against onnx.reference.
rng = np.random.default_rng(53)
feeds = {"activations": rng.standard_normal((2, 10)).astype(np.float32),
         "to_quantize": (rng.standard_normal((5, 4)) * 4).astype(np.float32)}
weights = rng.integers(-8, 8, (10, 6))
initializers = [
    helper.make_tensor("w4", TensorProto.INT4, [10, 6],
                       weights.flatten().tolist()),
    numpy_helper.from_array(
        rng.uniform(0.01, 0.1, (3, 6)).astype(np.float32), "w_scale"),
    helper.make_tensor("w_zero", TensorProto.INT4, [3, 6],
                       rng.integers(-2, 3, (3, 6)).flatten().tolist()),
    numpy_helper.from_array(
        rng.uniform(0.5, 2, (3, 4)).astype(np.float32), "q_scale"),
    helper.make_tensor("q_zero", TensorProto.UINT4, [3, 4],
                       rng.integers(0, 16, (3, 4)).flatten().tolist()),
    numpy_helper.from_array(np.array([[0.5], [0.25], [2], [1], [0.125]],
                                     np.float32), "row_scale")]
nodes = [
    helper.make_node("DequantizeLinear", ["w4", "w_scale", "w_zero"], ["w"],
                     axis=0, block_size=4),
    helper.make_node("MatMul", ["activations", "w"], ["projected"]),
    helper.make_node("QuantizeLinear", ["to_quantize", "q_scale", "q_zero"],
                     ["quantized_u4"], axis=0, block_size=2),
    helper.make_node("QuantizeLinear", ["to_quantize", "row_scale"],
                     ["quantized_i8"], axis=1, block_size=4,
                     output_dtype=TensorProto.INT8),
    helper.make_node("DequantizeLinear", ["quantized_i8", "row_scale"],
                     ["dequantized_i8"], axis=1, block_size=4)]
save("blocked_quantization", nodes,
     [value("activations", F, [2, 10]), value("to_quantize", F, [5, 4])],
     [value("projected", F, [2, 6]),
      value("quantized_u4", TensorProto.UINT4, [5, 4]),
      value("quantized_i8", TensorProto.INT8, [5, 4]),
      value("dequantized_i8", F, [5, 4])], 21, initializers)
write_tensors("blocked_quantization", list(feeds.values()),
              reference("blocked_quantization", feeds))


# blocked_quantization_errors: 3 blocks of 2 cannot cover a dim of 10
# (saved unchecked: the checker's inference refuses it too).
onnx.save(helper.make_model(
    helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x8", "scale3"], ["y"],
                          axis=1, block_size=2)],
        "blocked_quantization_errors", [value("x8", TensorProto.INT8, [4, 10])],
        [value("y", F, [4, 10])],
        [numpy_helper.from_array(np.ones((4, 3), np.float32), "scale3")]),
    producer_name="fusec", opset_imports=[helper.make_opsetid("", 21)]),
    "blocked_quantization_errors.onnx")


# control_flow_scopes: a named If inside a Loop body is converted once per
# iteration, each time in a scope of its own (it was one scope per name:
# "defined twice"). Against onnxruntime, with the flag false and true.
inner_if = helper.make_node(
    "If", ["flag"], ["stepped"], name="inner_if",
    then_branch=branch("then", [helper.make_node("Add", ["v", "one"], ["t"])],
                       [value("t", F, [2, 3])]),
    else_branch=branch("else", [helper.make_node("Mul", ["v", "v"], ["t"])],
                       [value("t", F, [2, 3])]))
loop_body = helper.make_graph(
    [inner_if, helper.make_node("Identity", ["c"], ["c_out"])], "body",
    [value("i", I64, []), value("c", TensorProto.BOOL, []),
     value("v", F, [2, 3])],
    [value("c_out", TensorProto.BOOL, []), value("stepped", F, [2, 3])])
save("control_flow_scopes",
     [helper.make_node("Loop", ["three", "", "x"], ["y"], name="outer_loop",
                       body=loop_body)],
     [value("x", F, [2, 3]), value("flag", TensorProto.BOOL, [])],
     [value("y", F, [2, 3])], 17,
     [numpy_helper.from_array(np.array(3, np.int64), "three"),
      numpy_helper.from_array(np.array(1, np.float32), "one")])
rng = np.random.default_rng(59)
x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
for flag in (False, True):
    feeds = {"x": x, "flag": np.array(flag)}
    write_tensors(f"control_flow_scopes_{str(flag).lower()}",
                  list(feeds.values()),
                  runtime_reference("control_flow_scopes", feeds))
