"""Writes a ResNet-18-shaped ONNX model for `fusec-bench --model=...`:

    python3 make_cnn_model.py OUT.onnx [--width 64] [--batch 1] [--size 224]

The topology is torchvision's ResNet-18 (a 7x7 stride-2 stem, max pool, four
stages of two basic blocks with widths w, 2w, 4w, 8w, 1x1 stride-2
downsampling, global average pool, a 1000-way Gemm), with
BatchNormalization kept as its own nodes, as an exporter leaves it without
constant folding. Every weight is a graph input rather than an initializer,
so the file is a few kilobytes whatever the width (fusec-bench feeds random
inputs; the device time of a run does not depend on the values). Needs the
`onnx` Python package.
"""
import argparse

import onnx
from onnx import TensorProto, helper

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--width", type=int, default=64)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--size", type=int, default=224)
args = parser.parse_args()

nodes, inputs = [], []


def weight(name, *shape):
    inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                list(shape)))
    return name


def conv_bn(x, name, cin, cout, kernel, stride, relu=True):
    pad = kernel // 2
    w = weight(name + "_w", cout, cin, kernel, kernel)
    nodes.append(helper.make_node("Conv", [x, w], [name], strides=[stride] * 2,
                                  pads=[pad] * 4))
    bn = [weight(f"{name}_bn_{p}", cout) for p in ("scale", "b", "mean", "var")]
    nodes.append(helper.make_node("BatchNormalization", [name] + bn,
                                  [name + "_bn"]))
    if not relu:
        return name + "_bn"
    nodes.append(helper.make_node("Relu", [name + "_bn"], [name + "_act"]))
    return name + "_act"


def basic_block(x, name, cin, cout, stride):
    y = conv_bn(x, name + "_a", cin, cout, 3, stride)
    y = conv_bn(y, name + "_b", cout, cout, 3, 1, relu=False)
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = conv_bn(x, name + "_down", cin, cout, 1, stride, relu=False)
    nodes.append(helper.make_node("Add", [y, shortcut], [name + "_sum"]))
    nodes.append(helper.make_node("Relu", [name + "_sum"], [name]))
    return name


inputs.append(helper.make_tensor_value_info(
    "image", TensorProto.FLOAT, [args.batch, 3, args.size, args.size]))
x = conv_bn("image", "stem", 3, args.width, 7, 2)
nodes.append(helper.make_node("MaxPool", [x], ["pooled"], kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1]))
x, channels = "pooled", args.width
for stage in range(4):
    width = args.width << stage
    for block in range(2):
        stride = 2 if stage > 0 and block == 0 else 1
        x = basic_block(x, f"stage{stage}_block{block}", channels, width,
                        stride)
        channels = width
nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
nodes.append(helper.make_node("Flatten", ["gap"], ["features"]))
nodes.append(helper.make_node(
    "Gemm", ["features", weight("fc_w", 1000, channels),
             weight("fc_b", 1000)], ["logits"], transB=1))
graph = helper.make_graph(
    nodes, "resnet18", inputs,
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                   [args.batch, 1000])])
model = helper.make_model(graph, producer_name="fusec",
                          opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, args.out)
