"""ONNX Runtime peers of `fusec-bench --target=cpu --model=...`: the same
ONNX files run by ONNX Runtime's CPU execution provider, on the inputs
committed next to them (<name>_input_<i>.pb), timed per call: the median
wall time of InferenceSession.run over --reps calls after --warmup calls.
Prints one JSON object per model, as torch_model_peers.py does; join with
fusec-bench's output by "case". Each output is also compared with the
committed reference (<name>_output_<i>.pb) to show that ORT ran the model
it was meant to.

    python3 ort_model_peers.py [--dir DIR] [--reps N] [--warmup N]
                               [--threads N] [MODEL ...]

MODEL is a name (gpt2, gpt2_d256.onnx) in DIR or a path to a .onnx file;
by default the models of test/models/onnx/export_models.py. DIR defaults to
models/onnx next to this script (as staged), else test/models/onnx of the
checkout. --threads sets ORT's intra-op threads (default: every core this
process may run on).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

MODELS = ["mlp_block", "gpt2", "bert", "llama", "gpt2_d256", "llama_d256",
          "bert_d128"]


def default_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "models", "onnx"),
              os.path.join(here, "..", "test", "models", "onnx")):
        if os.path.isdir(d):
            return d
    return "."


def read_pbs(prefix):
    """<prefix>0.pb, <prefix>1.pb, ... as numpy arrays."""
    arrays = []
    while os.path.exists(f"{prefix}{len(arrays)}.pb"):
        tensor = onnx.TensorProto()
        with open(f"{prefix}{len(arrays)}.pb", "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(numpy_helper.to_array(tensor))
    return arrays


def run_model(path, reps, warmup, threads):
    name = os.path.basename(path)
    stem = path[:-len(".onnx")]
    inputs = read_pbs(f"{stem}_input_")
    expected = read_pbs(f"{stem}_output_")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    if len(feeds) != len(session.get_inputs()):
        raise SystemExit(f"{path}: {len(session.get_inputs())} inputs, "
                         f"{len(inputs)} {stem}_input_<i>.pb files")
    outputs = session.run(None, feeds)
    first_ms = (time.perf_counter() - start) * 1e3
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e6)
    result = {"case": "model:" + name, "peer": "onnxruntime_cpu",
              "us": round(statistics.median(times), 1),
              "first_call_ms": round(first_ms, 1), "threads": threads,
              "onnxruntime": ort.__version__}
    if expected:
        result["max_abs_err"] = float(max(
            np.abs(got.astype(np.float64) - want).max()
            for got, want in zip(outputs, expected)))
    return result


def main():
    parser = argparse.ArgumentParser(
        description="ONNX Runtime CPU timings of ONNX models (JSON lines)")
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"default: {' '.join(MODELS)}")
    parser.add_argument("--dir", default=default_dir(),
                        help="folder of the models named without a path")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int,
                        default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    paths = []
    for model in args.models or MODELS:
        if os.sep not in model and not os.path.exists(model):
            model = os.path.join(args.dir, model)
        if not model.endswith(".onnx"):
            model += ".onnx"
        if not os.path.exists(model):
            parser.error(f"no such model: {model}")
        paths.append(model)
    for path in paths:
        print(json.dumps(run_model(path, max(1, args.reps),
                                   max(0, args.warmup),
                                   max(1, args.threads))), flush=True)


if __name__ == "__main__":
    sys.exit(main())
