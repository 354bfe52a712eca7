#!/usr/bin/env python3
"""Writes the node tests of the installed onnx package (pip's onnx 1.23 has
tests up to its newest opset; Debian's libonnx-testdata stops at ONNX 1.12)
in the backend test data layout that fusec-onnx-conformance reads:

    DIR/node/<test name>/model.onnx
    DIR/node/<test name>/test_data_set_<i>/{input,output}_<j>.pb

The expected outputs are the ones ONNX's own test cases compute (NumPy or
onnx.reference), not fusec's.

    python3 test/onnx/write_node_tests.py DIR
    build/tools/fusec-onnx-conformance --data=DIR --target=cpu
"""

import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def write_tensor(path, value, name):
    if isinstance(value, onnx.TensorProto):
        tensor = value
    else:
        tensor = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: write_node_tests.py DIR")
    root = os.path.join(sys.argv[1], "node")
    if os.path.exists(root):
        shutil.rmtree(root)
    written = skipped = 0
    for case in node.collect_testcases():
        directory = os.path.join(root, case.name)
        graph = case.model.graph
        # Sequences, maps and optionals have no place in fusec's inputs and
        # outputs; their cases are written all the same (fusec says why it
        # does not read them) but only tensor values get data files.
        os.makedirs(directory)
        with open(os.path.join(directory, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(directory, f"test_data_set_{i}")
            os.makedirs(data)
            for values, infos, kind in ((inputs, graph.input, "input"),
                                        (outputs, graph.output, "output")):
                for j, value in enumerate(values):
                    if not infos[j].type.HasField("tensor_type"):
                        skipped += 1
                        continue
                    write_tensor(os.path.join(data, f"{kind}_{j}.pb"), value,
                                 infos[j].name)
        written += 1
    print(f"{written} node tests of onnx {onnx.__version__} in {root}"
          f" ({skipped} non-tensor values without data files)")


if __name__ == "__main__":
    main()
