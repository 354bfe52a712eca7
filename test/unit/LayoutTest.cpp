//===- LayoutTest.cpp - Layout ops against scalar references -------------===//
//
// transpose, slice, concat, gather, pad, argmax/argmin and the views
// (squeeze, unsqueeze, flatten, expand), built with GraphBuilder, compiled
// and run, and compared bit for bit with references written here as plain
// loops over coordinates (independent of the compiler's helpers). One graph
// per dtype holds every case, so each dtype costs one host compile; the
// same graphs are compile-tested with NVRTC and run on the GPU by the [gpu]
// cases. Bad attrs must fail naming the node.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

using Ints = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// References: plain loops over coordinates, copying raw element bytes
//===----------------------------------------------------------------------===//

Shape unravel(int64_t index, const Shape &shape) {
  Shape coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = index % shape[d];
    index /= shape[d];
  }
  return coords;
}

int64_t ravel(const Shape &coords, const Shape &shape) {
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * shape[d] + coords[d];
  return index;
}

void copyElement(Tensor &to, int64_t toIndex, const Tensor &from,
                 int64_t fromIndex) {
  size_t width = dtypeBytes(to.dtype);
  std::memcpy(to.bytes.data() + toIndex * width,
              from.bytes.data() + fromIndex * width, width);
}

int64_t axisOf(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

Tensor refTranspose(const Tensor &x, Ints perm) {
  if (perm.empty())
    for (size_t d = x.shape.size(); d-- > 0;)
      perm.push_back(d);
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(x.shape[p]);
  Tensor out(x.dtype, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape), source(shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      source[perm[d]] = c[d];
    copyElement(out, i, x, ravel(source, x.shape));
  }
  return out;
}

/// ONNX Slice, written as the spec reads: clamp, then walk the indices.
Tensor refSlice(const Tensor &x, const Ints &starts, const Ints &ends,
                std::optional<Ints> axes = std::nullopt,
                std::optional<Ints> steps = std::nullopt) {
  size_t rank = x.shape.size();
  std::vector<Ints> picked(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t k = 0; k < x.shape[d]; ++k)
      picked[d].push_back(k);
  for (size_t j = 0; j < starts.size(); ++j) {
    int64_t axis = axisOf(axes ? (*axes)[j] : j, rank);
    __int128 dim = x.shape[axis];
    __int128 step = steps ? (*steps)[j] : 1;
    __int128 start = starts[j], end = ends[j];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::min(std::max<__int128>(start, 0), dim);
      end = std::min(std::max<__int128>(end, 0), dim);
    } else {
      start = std::min(std::max<__int128>(start, 0), dim - 1);
      end = std::min(std::max<__int128>(end, -1), dim - 1);
    }
    picked[axis].clear();
    for (__int128 k = start; step > 0 ? k < end : k > end; k += step)
      picked[axis].push_back(static_cast<int64_t>(k));
  }
  Shape shape;
  for (const Ints &indices : picked)
    shape.push_back(indices.size());
  Tensor out(x.dtype, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape);
    for (size_t d = 0; d < rank; ++d)
      c[d] = picked[d][c[d]];
    copyElement(out, i, x, ravel(c, x.shape));
  }
  return out;
}

Tensor refConcat(const std::vector<Tensor> &inputs, int64_t axis) {
  axis = axisOf(axis, inputs[0].shape.size());
  Shape shape = inputs[0].shape;
  shape[axis] = 0;
  for (const Tensor &input : inputs)
    shape[axis] += input.shape[axis];
  Tensor out(inputs[0].dtype, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape);
    size_t k = 0;
    while (c[axis] >= inputs[k].shape[axis])
      c[axis] -= inputs[k++].shape[axis];
    copyElement(out, i, inputs[k], ravel(c, inputs[k].shape));
  }
  return out;
}

int64_t indexAt(const Tensor &indices, int64_t j) {
  return indices.dtype == DType::I64 ? indices.as<int64_t>()[j]
                                     : indices.as<int32_t>()[j];
}

/// Out-of-range indices select 0 (fusec's documented choice).
Tensor refGather(const Tensor &data, const Tensor &indices, int64_t axis) {
  axis = axisOf(axis, data.shape.size());
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Tensor out(data.dtype, shape); // zero-filled
  size_t q = indices.shape.size();
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape);
    Shape ic(c.begin() + axis, c.begin() + axis + q);
    int64_t k = indexAt(indices, ravel(ic, indices.shape));
    if (k < 0)
      k += data.shape[axis];
    if (k < 0 || k >= data.shape[axis])
      continue;
    Shape source(c.begin(), c.begin() + axis);
    source.push_back(k);
    source.insert(source.end(), c.begin() + axis + q, c.end());
    copyElement(out, i, data, ravel(source, data.shape));
  }
  return out;
}

Tensor refPad(const Tensor &x, const Ints &pads, double value,
              std::optional<Ints> axes = std::nullopt) {
  size_t rank = x.shape.size();
  Ints dims;
  if (axes)
    for (int64_t a : *axes)
      dims.push_back(axisOf(a, rank));
  else
    for (size_t d = 0; d < rank; ++d)
      dims.push_back(d);
  Ints begins(rank, 0), ends(rank, 0);
  for (size_t j = 0; j < dims.size(); ++j) {
    begins[dims[j]] = pads[j];
    ends[dims[j]] = pads[dims.size() + j];
  }
  Shape shape;
  for (size_t d = 0; d < rank; ++d)
    shape.push_back(x.shape[d] + begins[d] + ends[d]);
  Tensor out(x.dtype, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape);
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      c[d] -= begins[d];
      inside &= c[d] >= 0 && c[d] < x.shape[d];
    }
    if (inside)
      copyElement(out, i, x, ravel(c, x.shape));
    else
      out.set(i, value);
  }
  return out;
}

/// NumPy's rule, stated differently from the kernels: if the row has a NaN
/// the answer is its first (last) NaN; otherwise the first (last) index
/// holding the extreme value.
Tensor refArg(const Tensor &x, int64_t axis, bool keepdims, bool last,
              bool max) {
  axis = axisOf(axis, x.shape.size());
  Shape kept = x.shape;
  kept[axis] = 1;
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (static_cast<int64_t>(d) != axis || keepdims)
      shape.push_back(kept[d]);
  Tensor out(DType::I64, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, kept);
    std::vector<double> row;
    for (int64_t k = 0; k < x.shape[axis]; ++k) {
      c[axis] = k;
      row.push_back(x.at(ravel(c, x.shape)));
    }
    Ints nans;
    for (size_t k = 0; k < row.size(); ++k)
      if (std::isnan(row[k]))
        nans.push_back(k);
    int64_t answer = -1;
    if (!nans.empty()) {
      answer = last ? nans.back() : nans.front();
    } else {
      double extreme = max ? *std::max_element(row.begin(), row.end())
                           : *std::min_element(row.begin(), row.end());
      for (size_t k = 0; k < row.size(); ++k)
        if (row[k] == extreme && (answer < 0 || last))
          answer = k;
    }
    out.as<int64_t>()[i] = answer;
  }
  return out;
}

Tensor refExpand(const Tensor &x, const Shape &shape) {
  Tensor out(x.dtype, shape);
  size_t offset = shape.size() - x.shape.size();
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape c = unravel(i, shape);
    Shape source(c.begin() + offset, c.end());
    for (size_t d = 0; d < source.size(); ++d)
      if (x.shape[d] == 1)
        source[d] = 0;
    copyElement(out, i, x, ravel(source, x.shape));
  }
  return out;
}

/// Same bytes, another shape.
Tensor reshaped(Tensor x, Shape shape) {
  x.shape = std::move(shape);
  return x;
}

//===----------------------------------------------------------------------===//
// Harness: one graph, many outputs, each with its expected tensor
//===----------------------------------------------------------------------===//

struct Cases {
  explicit Cases(const std::string &name) : builder(name) {}

  std::string input(const std::string &name, const Tensor &value) {
    inputs.push_back(value);
    return builder.input(name, value.dtype, value.shape);
  }
  void expect(const std::string &label, const std::string &value,
              Tensor reference) {
    builder.output(value);
    expected.push_back({label, std::move(reference)});
  }

  /// Compiles (also for the GPU with NVRTC, on CPU runs), runs and compares
  /// every output bit for bit.
  void run(Target target) {
    Graph graph = builder.build();
    if (target == Target::Cpu)
      test::compileForGpus(graph);
    std::vector<Tensor> outputs =
        compile(graph, test::testOptions(true, target)).run(inputs);
    REQUIRE(outputs.size() == expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto &[label, reference] = expected[i];
      INFO("case " << label << " on " << targetName(target) << ": got "
                   << outputs[i].typeString() << ", expected "
                   << reference.typeString());
      REQUIRE(outputs[i].dtype == reference.dtype);
      REQUIRE(outputs[i].shape == reference.shape);
      int64_t firstMismatch = -1;
      size_t width = dtypeBytes(reference.dtype);
      for (int64_t e = 0; e < reference.numElements() && firstMismatch < 0; ++e)
        if (std::memcmp(outputs[i].bytes.data() + e * width,
                        reference.bytes.data() + e * width, width) != 0)
          firstMismatch = e;
      INFO("first mismatch at element "
           << firstMismatch << ": got "
           << (firstMismatch >= 0 ? outputs[i].at(firstMismatch) : 0.0)
           << ", expected "
           << (firstMismatch >= 0 ? reference.at(firstMismatch) : 0.0));
      CHECK(firstMismatch < 0);
    }
  }

  GraphBuilder builder;
  std::vector<Tensor> inputs;
  std::vector<std::pair<std::string, Tensor>> expected;
};

/// Distinct-looking values (floats random in [-4, 4], ints random in
/// [-100, 100]) so that a misplaced element shows.
Tensor values(DType dtype, const Shape &shape, std::mt19937_64 &rng) {
  if (isUnsigned(dtype))
    return randomTensor(dtype, shape, rng, 0, 200);
  return randomTensor(dtype, shape, rng, -100, 100);
}
/// Few distinct values (0, 1, 2; i1: 0, 1): ties for argmax/argmin.
Tensor tieValues(DType dtype, const Shape &shape, std::mt19937_64 &rng) {
  Tensor tensor(dtype, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, static_cast<double>(rng() % (dtype == DType::I1 ? 2 : 3)));
  return tensor;
}

Tensor indexTensor(DType dtype, const Shape &shape, const Ints &values) {
  Tensor tensor(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::I64)
      tensor.as<int64_t>()[i] = values[i];
    else
      tensor.as<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return tensor;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

void checkLayoutOps(DType dtype, Target target) {
  std::mt19937_64 rng(1234);
  Cases c(std::string("layout_") + dtypeName(dtype));
  GraphBuilder &b = c.builder;
  Tensor t3 = values(dtype, {2, 3, 4}, rng);
  Tensor t4 = values(dtype, {3, 1, 4, 5}, rng);
  Tensor tl = values(dtype, {300, 257}, rng); // past the parallel threshold
  Tensor tz = values(dtype, {2, 0, 3}, rng);
  Tensor tv = values(dtype, {7}, rng);
  Tensor ts = values(dtype, {}, rng);
  Tensor t5 = values(dtype, {2, 5, 4}, rng);
  Tensor tw = values(dtype, {2, 3, 1}, rng);
  Tensor tc = values(dtype, {3, 1}, rng);
  Tensor tt = tieValues(dtype, {4, 5, 6}, rng);
  // Rows past the length where a CUDA block scans each output together.
  Tensor tr = tieValues(dtype, {3, 3001}, rng);
  std::string x3 = c.input("x3", t3), x4 = c.input("x4", t4),
              xl = c.input("xl", tl), xz = c.input("xz", tz),
              xv = c.input("xv", tv), xs = c.input("xs", ts),
              x5 = c.input("x5", t5), xw = c.input("xw", tw),
              xc = c.input("xc", tc), xt = c.input("xt", tt),
              xr = c.input("xr", tr);

  // transpose
  c.expect("transpose default", b.op("transpose", {x3}), refTranspose(t3, {}));
  c.expect("transpose 1,0,2",
           b.op("transpose", {x3}, {{"perm", Ints{1, 0, 2}}}),
           refTranspose(t3, {1, 0, 2}));
  c.expect("transpose rank 4",
           b.op("transpose", {x4}, {{"perm", Ints{2, 0, 3, 1}}}),
           refTranspose(t4, {2, 0, 3, 1}));
  c.expect("transpose large", b.op("transpose", {xl}, {{"perm", Ints{1, 0}}}),
           refTranspose(tl, {1, 0}));
  c.expect("transpose zero-size",
           b.op("transpose", {xz}, {{"perm", Ints{2, 0, 1}}}),
           refTranspose(tz, {2, 0, 1}));
  c.expect("transpose scalar", b.op("transpose", {xs}), refTranspose(ts, {}));
  c.expect("transpose vector", b.op("transpose", {xv}), refTranspose(tv, {}));

  // slice
  auto slice = [&](const std::string &label, const std::string &x,
                   const Tensor &t, Ints starts, Ints ends,
                   std::optional<Ints> axes = std::nullopt,
                   std::optional<Ints> steps = std::nullopt) {
    std::map<std::string, AttrValue> attrs = {{"starts", starts},
                                              {"ends", ends}};
    if (axes)
      attrs["axes"] = *axes;
    if (steps)
      attrs["steps"] = *steps;
    c.expect("slice " + label, b.op("slice", {x}, attrs),
             refSlice(t, starts, ends, axes, steps));
  };
  slice("one axis", x3, t3, {1}, {3}, Ints{1});
  slice("reverse last axis", x3, t3, {-1, 0}, {kMin, kMax}, Ints{-1, 0},
        Ints{-1, 1});
  slice("clamped reverse", x3, t3, {10}, {-10}, Ints{2}, Ints{-1});
  slice("no axes", x3, t3, {0, 0, 0}, {-1, 1000, 2});
  slice("prefix of dims", x3, t3, {1}, {2});
  slice("empty", x3, t3, {5}, {1}, Ints{1});
  slice("step 3", x3, t3, {0}, {kMax}, Ints{2}, Ints{3});
  slice("step -2", x3, t3, {-1}, {-100}, Ints{1}, Ints{-2});
  slice("step INT64_MIN", x3, t3, {2}, {kMin}, Ints{2}, Ints{kMin});
  slice("step INT64_MAX", x3, t3, {1}, {kMax}, Ints{-1}, Ints{kMax});
  slice("start INT64_MIN", x3, t3, {kMin, kMin}, {kMax, 2}, Ints{0, 2},
        Ints{1, -1});
  slice("large strided", xl, tl, {1, 5}, {-1, 250}, std::nullopt, Ints{2, 3});
  slice("zero-size input", xz, tz, {1}, {2}, Ints{0});
  slice("zero-size axis reversed", xz, tz, {-1}, {kMin}, Ints{1}, Ints{-1});
  slice("rank 4 three axes", x4, t4, {-2, 0, 1}, {0, 1, 5}, Ints{3, 1, 2},
        Ints{-1, 1, 2});

  // concat
  c.expect("concat axis 1", b.op("concat", {x3, x5, x3}, {{"axis", 1}}),
           refConcat({t3, t5, t3}, 1));
  c.expect("concat axis -1", b.op("concat", {x3, xw}, {{"axis", -1}}),
           refConcat({t3, tw}, -1));
  c.expect("concat one input", b.op("concat", {x3}, {{"axis", 0}}), t3);
  c.expect("concat axis 0", b.op("concat", {x3, x3, x3}, {{"axis", 0}}),
           refConcat({t3, t3, t3}, 0));
  Tensor tz4 = values(dtype, {2, 0, 4}, rng);
  std::string xz4 = c.input("xz4", tz4);
  c.expect("concat zero-size operand",
           b.op("concat", {xz4, x3, xz4}, {{"axis", 1}}),
           refConcat({tz4, t3, tz4}, 1));
  c.expect("concat zero-size result", b.op("concat", {xz, xz}, {{"axis", 0}}),
           refConcat({tz, tz}, 0));
  c.expect("concat large", b.op("concat", {xl, xl}, {{"axis", 1}}),
           refConcat({tl, tl}, 1));

  // gather: constant and input indices, i32 and i64, negative, out of range
  Tensor i64a = indexTensor(DType::I64, {5}, {2, -1, 0, -3, 1});
  Tensor i32a = indexTensor(DType::I32, {2, 2}, {1, 0, -1, -2});
  Tensor i64s = indexTensor(DType::I64, {}, {3});
  Tensor i32bad =
      indexTensor(DType::I32, {6}, {4, -5, 100, INT32_MIN, INT32_MAX, 0});
  Tensor i64bad = indexTensor(DType::I64, {4}, {kMin, kMax, -4, 3});
  Tensor i64empty = indexTensor(DType::I64, {0}, {});
  Tensor i32big = indexTensor(DType::I32, {3}, {-1, 0, 256});
  std::string ci64a = b.constant("ci64a", i64a);
  std::string ii32a = c.input("ii32a", i32a);
  std::string ci64s = b.constant("ci64s", i64s);
  std::string ii32bad = c.input("ii32bad", i32bad);
  std::string ci64bad = b.constant("ci64bad", i64bad);
  std::string ci64empty = b.constant("ci64empty", i64empty);
  std::string ii32big = c.input("ii32big", i32big);
  c.expect("gather axis 1 i64 constant",
           b.op("gather", {x3, ci64a}, {{"axis", 1}}), refGather(t3, i64a, 1));
  c.expect("gather axis 0 i32 input 2x2", b.op("gather", {x3, ii32a}),
           refGather(t3, i32a, 0));
  c.expect("gather scalar index axis -1",
           b.op("gather", {x3, ci64s}, {{"axis", -1}}),
           refGather(t3, i64s, -1));
  c.expect("gather out of range i32",
           b.op("gather", {x3, ii32bad}, {{"axis", 2}}),
           refGather(t3, i32bad, 2));
  c.expect("gather out of range i64",
           b.op("gather", {x3, ci64bad}, {{"axis", 1}}),
           refGather(t3, i64bad, 1));
  c.expect("gather empty indices",
           b.op("gather", {x3, ci64empty}, {{"axis", 1}}),
           refGather(t3, i64empty, 1));
  c.expect("gather from a dim of 0", b.op("gather", {xz, ii32a}, {{"axis", 1}}),
           refGather(tz, i32a, 1));
  c.expect("gather large", b.op("gather", {xl, ii32big}, {{"axis", 1}}),
           refGather(tl, i32big, 1));

  // pad (i1 pads with 1: a value every dtype holds)
  c.expect("pad default value",
           b.op("pad", {x3}, {{"pads", Ints{0, 1, 2, 1, 0, 0}}}),
           refPad(t3, {0, 1, 2, 1, 0, 0}, 0));
  c.expect("pad negative pads crop",
           b.op("pad", {x3},
                {{"pads", Ints{1, -1, 0, -1, 2, 1}}, {"constant_value", 1.0}}),
           refPad(t3, {1, -1, 0, -1, 2, 1}, 1));
  c.expect("pad axes -1",
           b.op("pad", {x3},
                {{"pads", Ints{2, 3}},
                 {"axes", Ints{-1}},
                 {"constant_value", int64_t(1)}}),
           refPad(t3, {2, 3}, 1, Ints{-1}));
  c.expect("pad two axes",
           b.op("pad", {x4},
                {{"pads", Ints{1, 0, 0, 2}},
                 {"axes", Ints{3, 1}},
                 {"mode", std::string("constant")}}),
           refPad(t4, {1, 0, 0, 2}, 0, Ints{3, 1}));
  c.expect("pad zero-size input",
           b.op("pad", {xz},
                {{"pads", Ints{0, 1, 0, 0, 1, 0}}, {"constant_value", 1.0}}),
           refPad(tz, {0, 1, 0, 0, 1, 0}, 1));
  c.expect("pad crop to zero",
           b.op("pad", {x3}, {{"pads", Ints{0, 0, -2, 0, 0, -2}}}),
           refPad(t3, {0, 0, -2, 0, 0, -2}, 0));
  c.expect("pad large", b.op("pad", {xl}, {{"pads", Ints{1, 1, 1, 1}}}),
           refPad(tl, {1, 1, 1, 1}, 0));
  c.expect("pad scalar", b.op("pad", {xs}, {{"pads", Ints{}}}), ts);

  // argmax / argmin, on values with many ties
  for (const char *op : {"argmax", "argmin"}) {
    bool max = std::string(op) == "argmax";
    std::string name = op;
    c.expect(name + " defaults", b.op(op, {xt}),
             refArg(tt, 0, true, false, max));
    c.expect(name + " axis 1 keepdims 0",
             b.op(op, {xt}, {{"axis", 1}, {"keepdims", 0}}),
             refArg(tt, 1, false, false, max));
    c.expect(name + " axis -1 last",
             b.op(op, {xt}, {{"axis", -1}, {"select_last_index", 1}}),
             refArg(tt, -1, true, true, max));
    c.expect(name + " axis 0 last keepdims 0",
             b.op(op, {xt},
                  {{"axis", 0}, {"select_last_index", 1}, {"keepdims", 0}}),
             refArg(tt, 0, false, true, max));
    c.expect(name + " distinct values", b.op(op, {x4}, {{"axis", 2}}),
             refArg(t4, 2, true, false, max));
    c.expect(name + " large", b.op(op, {xl}, {{"axis", 0}, {"keepdims", 0}}),
             refArg(tl, 0, false, false, max));
    c.expect(name + " zero-size result", b.op(op, {xz}, {{"axis", 2}}),
             refArg(tz, 2, true, false, max));
    c.expect(name + " vector", b.op(op, {xv}, {{"keepdims", 0}}),
             refArg(tv, 0, false, false, max));
    c.expect(name + " long rows", b.op(op, {xr}, {{"axis", -1}}),
             refArg(tr, -1, true, false, max));
    c.expect(name + " long rows last",
             b.op(op, {xr}, {{"axis", 1}, {"select_last_index", 1}}),
             refArg(tr, 1, true, true, max));
  }

  // views: squeeze, unsqueeze, flatten (reshape); expand (broadcast_to).
  // Each also feeds a transpose, so that a kernel reads the view.
  c.expect("squeeze all", b.op("squeeze", {x4}), reshaped(t4, {3, 4, 5}));
  c.expect("squeeze axes", b.op("squeeze", {x4}, {{"axes", Ints{-3}}}),
           reshaped(t4, {3, 4, 5}));
  c.expect("transpose of squeeze",
           b.op("transpose", {b.op("squeeze", {x4}, {{"axes", Ints{1}}})}),
           refTranspose(reshaped(t4, {3, 4, 5}), {}));
  c.expect("unsqueeze", b.op("unsqueeze", {x3}, {{"axes", Ints{0, -1}}}),
           reshaped(t3, {1, 2, 3, 4, 1}));
  c.expect("unsqueeze scalar", b.op("unsqueeze", {xs}, {{"axes", Ints{0}}}),
           reshaped(ts, {1}));
  c.expect("flatten default", b.op("flatten", {x3}), reshaped(t3, {2, 12}));
  c.expect("flatten axis 0", b.op("flatten", {x3}, {{"axis", 0}}),
           reshaped(t3, {1, 24}));
  c.expect("flatten axis -1", b.op("flatten", {x3}, {{"axis", -1}}),
           reshaped(t3, {6, 4}));
  c.expect("flatten axis 3", b.op("flatten", {x3}, {{"axis", 3}}),
           reshaped(t3, {24, 1}));
  c.expect("flatten zero-size", b.op("flatten", {xz}), reshaped(tz, {2, 0}));
  c.expect("transpose of flatten",
           b.op("transpose", {b.op("flatten", {x3}, {{"axis", 2}})}),
           refTranspose(reshaped(t3, {6, 4}), {}));
  c.expect("expand to higher rank",
           b.op("expand", {xc}, {{"shape", Ints{2, 1, 5}}}),
           refExpand(tc, {2, 3, 5}));
  c.expect("expand smaller shape",
           b.op("expand", {x3}, {{"shape", Ints{1, 4}}}), t3);
  c.expect("expand vector", b.op("expand", {xv}, {{"shape", Ints{3, 1}}}),
           refExpand(tv, {3, 7}));

  c.run(target);
}

/// argmax/argmin with NaN and infinities: NumPy's answers.
void checkNanArgs(DType dtype, Target target) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor t(dtype, {4, 5});
  const double rows[4][5] = {{1, nan, 3, nan, 0},
                             {nan, 2, 2, -inf, nan},
                             {inf, 1, inf, -1, -1},
                             {-inf, -inf, 0, inf, inf}};
  for (int64_t i = 0; i < 20; ++i)
    t.set(i, rows[i / 5][i % 5]);
  Cases c(std::string("nan_") + dtypeName(dtype));
  std::string x = c.input("x", t);
  // Hand-checked against np.argmax / np.argmin (first index); the last-index
  // variants are NumPy's on the reversed rows.
  const Ints expected[4] = {/*argmax first*/ {1, 0, 0, 3},
                            /*argmax last*/ {3, 4, 2, 4},
                            /*argmin first*/ {1, 0, 3, 0},
                            /*argmin last*/ {3, 4, 4, 1}};
  int variant = 0;
  for (bool max : {true, false})
    for (bool last : {false, true}) {
      std::string label =
          std::string(max ? "argmax" : "argmin") + (last ? " last" : " first");
      Tensor reference = refArg(t, 1, false, last, max);
      for (int row = 0; row < 4; ++row) {
        INFO(label << " row " << row);
        REQUIRE(reference.as<int64_t>()[row] == expected[variant][row]);
      }
      c.expect(label,
               c.builder.op(max ? "argmax" : "argmin", {x},
                            {{"axis", 1},
                             {"keepdims", 0},
                             {"select_last_index", last ? 1 : 0}}),
               reference);
      ++variant;
    }
  // Long rows (a CUDA block scans each): the rows above, each value
  // repeated 600 times (3000 entries; every extreme and NaN ties with its
  // copies), against the same reference.
  Tensor longRows(dtype, {4, 3000});
  for (int64_t i = 0; i < longRows.numElements(); ++i)
    longRows.set(i, rows[i / 3000][(i % 3000) / 600]);
  std::string xl = c.input("xl", longRows);
  for (bool max : {true, false})
    for (bool last : {false, true})
      c.expect(std::string(max ? "argmax" : "argmin") + " long" +
                   (last ? " last" : " first"),
               c.builder.op(max ? "argmax" : "argmin", {xl},
                            {{"axis", -1},
                             {"keepdims", 0},
                             {"select_last_index", last ? 1 : 0}}),
               refArg(longRows, 1, false, last, max));
  c.run(target);
}

} // namespace

#define LAYOUT_DTYPE_TEST(dtype)                                               \
  TEST_CASE("layout ops on " #dtype " match the reference", "[layout]") {      \
    checkLayoutOps(DType::dtype, Target::Cpu);                                 \
  }                                                                            \
  TEST_CASE("layout ops on " #dtype " match the reference on the GPU",         \
            "[layout][gpu]") {                                                 \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    checkLayoutOps(DType::dtype, Target::Cuda);                                \
  }
LAYOUT_DTYPE_TEST(F32)
LAYOUT_DTYPE_TEST(BF16)
LAYOUT_DTYPE_TEST(F16)
LAYOUT_DTYPE_TEST(F64)
LAYOUT_DTYPE_TEST(I64)
LAYOUT_DTYPE_TEST(I32)
LAYOUT_DTYPE_TEST(I8)
LAYOUT_DTYPE_TEST(I1)
LAYOUT_DTYPE_TEST(I16)
LAYOUT_DTYPE_TEST(U8)
LAYOUT_DTYPE_TEST(U16)
LAYOUT_DTYPE_TEST(U32)
LAYOUT_DTYPE_TEST(U64)
#undef LAYOUT_DTYPE_TEST

TEST_CASE("argmax and argmin treat NaN as NumPy does", "[layout]") {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    checkNanArgs(dtype, Target::Cpu);
  }
}

TEST_CASE("argmax and argmin treat NaN as NumPy does on the GPU",
          "[layout][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    checkNanArgs(dtype, Target::Cuda);
  }
}

TEST_CASE("slice follows ONNX's documented examples", "[layout]") {
  Tensor data(DType::I64, {2, 4});
  for (int64_t i = 0; i < 8; ++i)
    data.as<int64_t>()[i] = i + 1;
  GraphBuilder b("onnx_slice");
  std::string x = b.input("x", DType::I64, {2, 4});
  b.output(b.op("slice", {x},
                {{"axes", Ints{0, 1}},
                 {"starts", Ints{1, 0}},
                 {"ends", Ints{2, 3}},
                 {"steps", Ints{1, 2}}}));
  b.output(
      b.op("slice", {x}, {{"starts", Ints{0, 1}}, {"ends", Ints{-1, 1000}}}));
  // NumPy: x[:, ::-1] and x[1::-1, -2:-5:-2].
  b.output(b.op("slice", {x},
                {{"starts", Ints{-1}},
                 {"ends", Ints{kMin}},
                 {"axes", Ints{1}},
                 {"steps", Ints{-1}}}));
  b.output(b.op("slice", {x},
                {{"starts", Ints{1, -2}},
                 {"ends", Ints{kMin, -5}},
                 {"steps", Ints{-1, -2}}}));
  test::compileForGpus(b.build());
  std::vector<Tensor> out = compile(b.build(), test::testOptions()).run({data});
  auto elements = [](const Tensor &t) {
    return Ints(t.as<int64_t>(), t.as<int64_t>() + t.numElements());
  };
  CHECK(out[0].shape == Shape{1, 2});
  CHECK(elements(out[0]) == Ints{5, 7});
  CHECK(out[1].shape == Shape{1, 3});
  CHECK(elements(out[1]) == Ints{2, 3, 4});
  CHECK(elements(out[2]) == Ints{4, 3, 2, 1, 8, 7, 6, 5});
  CHECK(out[3].shape == Shape{2, 2});
  CHECK(elements(out[3]) == Ints{7, 5, 3, 1});
}

TEST_CASE("layout kernels report their schedule and names", "[layout]") {
  GraphBuilder b("names");
  std::string x = b.input("x", DType::F32, {2, 3});
  b.output(b.op("transpose", {x}));
  CompiledModel model = compile(b.build(), test::testOptions());
  REQUIRE(model.program().kernels.size() == 1);
  const KernelDesc &kernel = model.program().kernels[0];
  CHECK(kernel.name == "layout_transpose_0");
  CHECK(kernel.schedule == "layout");
  CHECK(kernel.ops == std::vector<std::string>{"transpose"});
  Program cuda =
      lowerGraph(b.build(), test::testOptions(true, Target::Cuda)).program;
  REQUIRE(cuda.kernels.size() == 1);
  CHECK(cuda.kernels[0].launch.gridX == 1);
  CHECK(cuda.kernels[0].launch.blockX == 256);
  CHECK_THAT(cuda.kernels[0].source,
             Contains("__global__ void __launch_bounds__(256) "
                      "layout_transpose_0(const float *__restrict__ in0, "
                      "float *__restrict__ out0)"));
}

TEST_CASE("zero-element layout kernels launch a grid of one block",
          "[layout]") {
  GraphBuilder b("empty");
  std::string x = b.input("x", DType::F32, {2, 0, 3});
  b.output(b.op("transpose", {x}));
  Program cuda =
      lowerGraph(b.build(), test::testOptions(true, Target::Cuda)).program;
  REQUIRE(cuda.kernels.size() == 1);
  CHECK(cuda.kernels[0].launch.gridX == 1);
  CHECK_THAT(cuda.kernels[0].source, Contains("no elements"));
}

TEST_CASE("bad layout attrs fail naming the node", "[layout]") {
  struct Case {
    const char *label, *op;
    std::vector<const char *> inputs;
    std::map<std::string, AttrValue> attrs;
    const char *expected;
  };
  const Case cases[] = {
      {"perm not a permutation",
       "transpose",
       {"x"},
       {{"perm", Ints{0, 0, 1}}},
       "'transpose' perm [0, 0, 1] is not a permutation of the 3 dims"},
      {"perm of the wrong length",
       "transpose",
       {"x"},
       {{"perm", Ints{1, 0}}},
       "is not a permutation of the 3 dims [0, 3)"},
      {"perm not a list",
       "transpose",
       {"x"},
       {{"perm", std::string("01")}},
       "'transpose' attr \"perm\" must be an array of integers"},
      {"slice without starts",
       "slice",
       {"x"},
       {{"ends", Ints{1}}},
       "'slice' needs attr \"starts\""},
      {"slice step 0",
       "slice",
       {"x"},
       {{"starts", Ints{0}}, {"ends", Ints{1}}, {"steps", Ints{0}}},
       "step 0 (for axis 0) is 0; steps must be non-zero"},
      {"slice lengths",
       "slice",
       {"x"},
       {{"starts", Ints{0, 0}}, {"ends", Ints{1}}},
       "'slice' has 2 starts but 1 ends"},
      {"slice axis out of range",
       "slice",
       {"x"},
       {{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{3}}},
       "axes [3] has axis 3 out of range for rank 3 (expected [-3, 3))"},
      {"slice axis twice",
       "slice",
       {"x"},
       {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"axes", Ints{0, -3}}},
       "axes [0, -3] names dim 0 twice"},
      {"concat dtypes",
       "concat",
       {"x", "i"},
       {{"axis", 0}},
       "'concat' operand #1 has dtype i32 but operand #0 has f32"},
      {"concat shapes",
       "concat",
       {"x", "y"},
       {{"axis", 0}},
       "operand #1 of shape 2x4x4 differs from operand #0 of shape 2x3x4 in "
       "dim 1"},
      {"concat axis",
       "concat",
       {"x"},
       {{"axis", 3}},
       "'concat' axis 3 is out of range for rank 3"},
      {"concat without axis",
       "concat",
       {"x"},
       {},
       "'concat' needs attr \"axis\""},
      {"concat without inputs",
       "concat",
       {},
       {{"axis", 0}},
       "'concat' takes 1 or more inputs but 0 were given"},
      {"gather float indices",
       "gather",
       {"x", "x"},
       {},
       "'gather' indices must be i32 or i64, not tensor<2x3x4xf32>"},
      {"gather axis",
       "gather",
       {"x", "i"},
       {{"axis", -4}},
       "'gather' axis -4 is out of range for rank 3"},
      {"gather arity",
       "gather",
       {"x"},
       {},
       "'gather' takes 2 inputs but 1 were given"},
      {"pad mode",
       "pad",
       {"x"},
       {{"pads", Ints{0, 0, 0, 0, 0, 0}}, {"mode", std::string("reflect")}},
       "'pad' mode \"reflect\" is not supported; only \"constant\" is"},
      {"pad length",
       "pad",
       {"x"},
       {{"pads", Ints{1, 1}}},
       "pads [1, 1] has 2 values; expected 6"},
      {"pad crops too much",
       "pad",
       {"x"},
       {{"pads", Ints{0, -2, 0, 0, -2, 0}}},
       "pads of dim 1 (begin -2, end -2) remove more than its 3 elements"},
      {"pad fractional int value",
       "pad",
       {"i"},
       {{"pads", Ints{0, 1}}, {"constant_value", 1.5}},
       "constant_value 1.5 is not a whole number in the range of i32"},
      {"argmax keepdims",
       "argmax",
       {"x"},
       {{"keepdims", 2}},
       "'argmax' attr \"keepdims\" must be 0 or 1, not 2"},
      {"argmin axis",
       "argmin",
       {"x"},
       {{"axis", 3}},
       "'argmin' axis 3 is out of range for rank 3"},
      {"argmax of nothing",
       "argmax",
       {"z"},
       {{"axis", 1}},
       "reduces dim 1 of size 0 (shape 2x0x3): an empty sequence has no "
       "index"},
      {"squeeze a dim of 3",
       "squeeze",
       {"x"},
       {{"axes", Ints{1}}},
       "'squeeze' cannot squeeze dim 1 of size 3"},
      {"unsqueeze twice",
       "unsqueeze",
       {"x"},
       {{"axes", Ints{0, -5}}},
       "'unsqueeze' axes [0, -5] names dim 0 twice"},
      {"unsqueeze without axes",
       "unsqueeze",
       {"x"},
       {},
       "'unsqueeze' needs attr \"axes\""},
      {"flatten axis",
       "flatten",
       {"x"},
       {{"axis", 4}},
       "'flatten' axis 4 is out of range for rank 3 (expected [-3, 3])"},
      {"expand incompatible",
       "expand",
       {"x"},
       {{"shape", Ints{5, 4}}},
       "'expand' cannot expand shape 2x3x4 to [5, 4]"},
      {"expand negative",
       "expand",
       {"x"},
       {{"shape", Ints{-1}}},
       "'expand' shape [-1] has a negative dim -1"},
  };
  for (const Case &c : cases) {
    INFO(c.label);
    GraphBuilder b("bad");
    std::map<std::string, std::string> names = {
        {"x", b.input("x", DType::F32, {2, 3, 4})},
        {"y", b.input("y", DType::F32, {2, 4, 4})},
        {"i", b.input("i", DType::I32, {3})},
        {"z", b.input("z", DType::F32, {2, 0, 3})}};
    std::vector<std::string> inputs;
    for (const char *input : c.inputs)
      inputs.push_back(names.at(input));
    b.output(b.op(c.op, inputs, c.attrs));
    std::string node = std::string(c.op) + "_0";
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node '" + node + "': error: ") &&
                          Contains(c.expected));
  }
}
