//===- Signal.cpp - ONNX signal ops ---------------------------------------===//
//
// Signal processing: DFT, STFT and the window functions.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxConverter.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

namespace fusec::onnx_import {

namespace {

/// HannWindow, HammingWindow and BlackmanWindow: constants of `size` (a
/// constant) points in output_datatype, computed in f64 from the spec's
/// formulas (periodic: over size points, else size - 1).
void windowFunction(OnnxConverter &converter, const onnx::NodeProto &proto,
                    GraphNode &node) {
  const std::string &op = proto.op_type();
  const Tensor &sizeValue =
      converter.constantValue(node.inputs.at(0), op + "'s size");
  if (sizeValue.numElements() != 1 || isFloat(sizeValue.dtype))
    throw Unsupported{op + "'s size must be one integer"};
  if (!(sizeValue.at(0) >= 0 && sizeValue.at(0) <= (1 << 24)))
    throw Unsupported{op + "'s size must be in [0, 2^24]"};
  const int64_t size = static_cast<int64_t>(sizeValue.at(0));
  DType dtype = DType::F32;
  if (auto it = node.attrs.find("output_datatype"); it != node.attrs.end()) {
    std::optional<DType> chosen =
        dtypeOfOnnx(static_cast<int32_t>(std::get<int64_t>(it->second)));
    if (!chosen)
      throw Unsupported{op + "'s output_datatype is not a dtype fusec has"};
    dtype = *chosen;
  }
  bool periodic = true;
  if (auto it = node.attrs.find("periodic"); it != node.attrs.end())
    periodic = std::get<int64_t>(it->second) != 0;
  const double span = static_cast<double>(periodic ? size : size - 1);
  const double pi = 3.14159265358979323846;
  Tensor window(dtype, {size});
  for (int64_t n = 0; n < size; ++n) {
    double x = static_cast<double>(n);
    double value =
        op == "HannWindow" ? std::pow(std::sin(x * pi / span), 2)
        : op == "HammingWindow"
            ? 25.0 / 46.0 - std::cos(x * pi * 2 / span) * (21.0 / 46.0)
            : 0.42 - 0.5 * std::cos(x * pi * 2 / span) +
                  0.08 * std::cos(x * pi * 4 / span);
    window.set(n, value);
  }
  becomeView(node, converter.addStepConstant(node, "window", window),
             Shape{size});
}

/// The discrete Fourier transform of `x` (real [..., 1] or complex [...,
/// 2], shaped `shape`) along `axis` at `length` points, as NumPy's fft the
/// reference evaluator calls: the signal cut or zero-padded to `length`,
/// then a matmul (in f64) by constant cos and sin tables per output bin;
/// `onesided` keeps the bins up to length / 2 (forward) or takes them as
/// a Hermitian spectrum and gives a real signal (inverse: irfft); the
/// inverse divides by `length`. Returns the result, [..., 2] or [..., 1],
/// in x's dtype.
std::string fourierTransform(OnnxConverter &converter, GraphNode &node,
                             const std::string &x, const Shape &shape,
                             DType dtype, int64_t axis, int64_t length,
                             bool inverse, bool onesided,
                             const std::string &tag) {
  const int64_t rank = shape.size();
  if (!isFloat(dtype))
    throw Unsupported{"DFT takes floats"};
  if (rank < 2 || (shape.back() != 1 && shape.back() != 2))
    throw Unsupported{"DFT's input must end in a dim of 1 (real) or 2 "
                      "(complex), not [" +
                      formatShape(shape) + "]"};
  if (axis < 0 || axis >= rank - 1)
    throw Unsupported{"DFT's axis must be a signal dim"};
  if (length < 1)
    throw Unsupported{"DFT's length must be positive"};
  const bool complex = shape.back() == 2;
  const bool realResult = inverse && onesided;
  const int64_t samples = shape[axis];
  const int64_t bins = realResult || !onesided ? length : length / 2 + 1;
  checkConstantElements(samples * bins, "DFT's tables");
  auto step = [&](const char *op, std::vector<std::string> inputs,
                  const std::string &suffix,
                  std::map<std::string, AttrValue> attrs = {}) {
    return converter.addStep(node, op, std::move(inputs), tag + suffix,
                             std::move(attrs));
  };
  // The real and imaginary parts with the signal axis last, in f64.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  Shape partShape(shape.begin(), shape.end() - 1);
  auto part = [&](int64_t index, const std::string &suffix) {
    std::string sliced = step("slice", {x}, suffix + "_sliced",
                              {{"starts", std::vector<int64_t>{index}},
                               {"ends", std::vector<int64_t>{index + 1}},
                               {"axes", std::vector<int64_t>{rank - 1}},
                               {"steps", std::vector<int64_t>{1}}});
    std::string moved = step(
        "transpose",
        {viewStep(converter, node, sliced, partShape, tag + suffix + "_part")},
        suffix + "_moved", {{"perm", perm}});
    return dtype == DType::F64 ? moved
                               : step("cast", {moved}, suffix + "_f64",
                                      {{"dtype", std::string("f64")}});
  };
  const std::string real = part(0, "_real");
  const std::string imaginary = complex ? part(1, "_imaginary") : "";
  // Tables [samples, bins]: sample n (past `length` cut off, n up to
  // length / 2 for irfft) against bin k.
  const double pi = std::acos(-1.0);
  Tensor cosines(DType::F64, {samples, bins}),
      sines(DType::F64, {samples, bins});
  for (int64_t n = 0; n < samples; ++n)
    for (int64_t k = 0; k < bins; ++k) {
      bool used = n < length && (!realResult || n <= length / 2);
      double angle = 2 * pi * static_cast<double>((n * k) % length) /
                     static_cast<double>(length);
      double scale = !used      ? 0.0
                     : !inverse ? 1.0
                                : 1.0 / static_cast<double>(length);
      // irfft counts each bin but 0 and length / 2 twice (its conjugate).
      if (realResult && n != 0 && !(length % 2 == 0 && n == length / 2))
        scale *= 2;
      cosines.set(n * bins + k, scale * std::cos(angle));
      sines.set(n * bins + k, scale * std::sin(angle));
    }
  const std::string cosTable =
      converter.addStepConstant(node, tag + "_cos", std::move(cosines));
  const std::string sinTable =
      converter.addStepConstant(node, tag + "_sin", std::move(sines));
  auto product = [&](const std::string &value, const std::string &table,
                     const std::string &suffix) {
    return step("matmul", {value, table}, suffix);
  };
  // Forward: re = xr c + xi s, im = xi c - xr s; inverse: the signs of s
  // flip.
  std::string outReal = product(real, cosTable, "_rc");
  std::string outImaginary;
  if (complex) {
    std::string is = product(imaginary, sinTable, "_is");
    outReal = step(inverse ? "sub" : "add", {outReal, is}, "_out_real");
  }
  if (!realResult) {
    std::string rs = product(real, sinTable, "_rs");
    if (complex) {
      std::string ic = product(imaginary, cosTable, "_ic");
      outImaginary = step(inverse ? "add" : "sub", {ic, rs}, "_out_imaginary");
    } else {
      outImaginary = inverse ? rs : step("neg", {rs}, "_out_imaginary");
    }
  }
  // Back to the input's layout with the complex dim last.
  std::vector<int64_t> back(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    back[perm[d]] = d;
  Shape outPart = partShape;
  outPart[axis] = bins;
  Shape withComplex = outPart;
  withComplex.push_back(1);
  auto restore = [&](const std::string &value, const std::string &suffix) {
    std::string moved =
        step("transpose", {value}, suffix + "_back", {{"perm", back}});
    std::string cast = dtype == DType::F64
                           ? moved
                           : step("cast", {moved}, suffix + "_cast",
                                  {{"dtype", std::string(dtypeName(dtype))}});
    return viewStep(converter, node, cast, withComplex, tag + suffix + "_out");
  };
  if (realResult)
    return restore(outReal, "_real_result");
  return step("concat",
              {restore(outReal, "_real_result"),
               restore(outImaginary, "_imaginary_result")},
              "_spectrum", {{"axis", rank - 1}});
}

/// DFT (opset 17; its axis an input from 20).
void dft(OnnxConverter &converter, const onnx::NodeProto &, GraphNode &node) {
  const std::string x = node.inputs.at(0);
  const Shape shape = converter.requireShape(x, "DFT");
  const int64_t rank = shape.size();
  int64_t axis = converter.opset >= 20 ? -2 : intAttr(node, "axis", 1);
  if (converter.opset >= 20 && node.inputs.size() > 2 &&
      !node.inputs[2].empty()) {
    std::vector<int64_t> given = integersOf(
        converter.constantValue(node.inputs[2], "DFT's axis"), "DFT's axis");
    if (given.size() != 1)
      throw Unsupported{"DFT's axis must be one integer"};
    axis = given[0];
  }
  if (axis < -rank || axis >= rank)
    throw Unsupported{"DFT's axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank)};
  axis = (axis + rank) % rank;
  const bool inverse = intAttr(node, "inverse", 0) != 0;
  const bool onesided = intAttr(node, "onesided", 0) != 0;
  int64_t length =
      inverse && onesided ? 2 * (shape.at(axis) - 1) : shape.at(axis);
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    std::vector<int64_t> given =
        integersOf(converter.constantValue(node.inputs[1], "DFT's dft_length"),
                   "DFT's dft_length");
    if (given.size() != 1)
      throw Unsupported{"DFT's dft_length must be one integer"};
    length = given[0];
  }
  std::string result = fourierTransform(converter, node, x, shape,
                                        converter.requireDType(x, "DFT"), axis,
                                        length, inverse, onesided, "dft");
  Shape out = shape;
  out[axis] = inverse && onesided ? length : onesided ? length / 2 + 1 : length;
  out.back() = inverse && onesided ? 1 : 2;
  becomeView(node, result, out);
}

/// STFT (opset 17): frames of frame_length samples every frame_step,
/// weighted by the window, each transformed (onesided by default).
void shortTimeFourier(OnnxConverter &converter, const onnx::NodeProto &,
                      GraphNode &node) {
  auto input = [&](size_t i) { return nameOrEmpty(node.inputs, i); };
  const std::string x = input(0), stepInput = input(1), window = input(2),
                    lengthInput = input(3);
  const Shape shape = converter.requireShape(x, "STFT");
  if (shape.size() != 3)
    throw Unsupported{"STFT's signal must be [batch, length, 1 or 2]"};
  auto single = [&](const std::string &name, const char *what) {
    std::vector<int64_t> values =
        integersOf(converter.constantValue(name, what), what);
    if (values.size() != 1)
      throw Unsupported{std::string(what) + " must be one integer"};
    return values[0];
  };
  if (stepInput.empty())
    throw Unsupported{"STFT needs its frame_step"};
  const int64_t frameStep = single(stepInput, "STFT's frame_step");
  int64_t frameLength = shape[1];
  if (!lengthInput.empty())
    frameLength = single(lengthInput, "STFT's frame_length");
  else if (!window.empty())
    frameLength = converter.requireShape(window, "STFT's window").at(0);
  const int64_t windowLength =
      window.empty() ? frameLength
                     : converter.requireShape(window, "STFT's window").at(0);
  if (frameStep < 1 || frameLength < 1 || windowLength > shape[1] ||
      windowLength < 1)
    throw Unsupported{"STFT's frame_step and frame_length must be positive "
                      "and the frames fit the signal"};
  const int64_t frames = 1 + (shape[1] - frameLength) / frameStep;
  if (frames < 1)
    throw Unsupported{"STFT's signal is shorter than a frame"};
  checkConstantElements(frames * windowLength, "STFT's frame table");
  // [batch, frames, window, 1 or 2]: a gather of each frame's samples.
  Tensor positions(DType::I64, {frames, windowLength});
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < windowLength; ++i)
      positions.set(f * windowLength + i,
                    static_cast<double>(f * frameStep + i));
  std::string framed =
      converter.addStep(node, "gather",
                        {x, converter.addStepConstant(node, "frame_positions",
                                                      std::move(positions))},
                        "frames", {{"axis", int64_t(1)}});
  if (!window.empty())
    framed = converter.addStep(
        node, "mul",
        {framed, viewStep(converter, node, window, {1, 1, windowLength, 1},
                          "window_column")},
        "windowed");
  const bool onesided = intAttr(node, "onesided", 1) != 0;
  std::string result = fourierTransform(
      converter, node, framed, {shape[0], frames, windowLength, shape[2]},
      converter.requireDType(x, "STFT"), 2, frameLength, false, onesided,
      "stft");
  becomeView(
      node, result,
      {shape[0], frames, onesided ? frameLength / 2 + 1 : frameLength, 2});
}

} // namespace

void registerSignalOps(OnnxRegistry &registry) {
  registry.on("DFT", "reshape", 17)
      .attr("axis", 17, 19)
      .attrs({"inverse", "onesided"})
      .readsConstantsFrom(1) // dft_length and axis
      .rewrite(dft);
  registry.on("STFT", "reshape", 17)
      .attr("onesided")
      .readsConstant(1)      // frame_step
      .readsConstantsFrom(3) // frame_length
      .rewrite(shortTimeFourier);
  for (const char *window : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    registry.on(window, "reshape", 17)
        .attrs({"output_datatype", "periodic"})
        .readsConstant(0) // the size is the length
        .rewrite(windowFunction);
}

} // namespace fusec::onnx_import
