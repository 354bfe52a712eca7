//===- InPlaceUpdateTest.cpp - Outputs that update inputs in place --------===//
//
// A KV cache's update (ONNX TensorScatter of one position, lowered to a
// select between the new row and the past cache) may write its output into
// its input's memory: codegen marks such outputs (BufferDesc::updatesInput)
// only when the writing kernel reads the input at the element it writes and
// nothing else reads it. On the GPU a device run may then pass one address
// for both; any other overlap of an output with an input is refused.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "runtime/core/Compare.h"
#include "test/unit/TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <random>

using namespace fusec;

namespace {

const Shape kCache = {1, 2, 16, 4}, kRow = {1, 2, 1, 4};

/// present = (cache position == `position`) ? update : past; with
/// `pastSummed`, a second output reads past in a reduction as well.
Graph cacheUpdate(bool pastSummed) {
  GraphBuilder b("cache_update");
  std::string past = b.input("past", DType::F32, kCache);
  std::string update = b.input("update", DType::F32, kRow);
  std::string position = b.input("position", DType::I64, {1, 1, 1, 1});
  Tensor rows(DType::I64, {1, 1, kCache[2], 1});
  for (int64_t k = 0; k < kCache[2]; ++k)
    rows.set(k, double(k));
  std::string written = b.op("eq", {b.constant("rows", rows), position});
  b.output(b.op("select", {written, update, past}));
  if (pastSummed)
    b.output(b.op("reduce_sum", {past}, {{"axes", std::vector<int64_t>{3}}}));
  return b.build();
}

Tensor expectedUpdate(const Tensor &past, const Tensor &update,
                      int64_t position) {
  Tensor present = past;
  for (int64_t i = 0; i < present.numElements(); ++i) {
    int64_t d = i % kCache[3], k = (i / kCache[3]) % kCache[2],
            h = i / (kCache[3] * kCache[2]);
    if (k == position)
      present.set(i, update.at(h * kCache[3] + d));
  }
  return present;
}

void checkMarks(Target target) {
  CompiledModel model =
      compile(cacheUpdate(false), test::testOptions(true, target));
  const Program &program = model.program();
  CHECK(program.buffers[program.outputs[0]].updatesInput == program.inputs[0]);
  // Past read by a reduction too: a write in place would change what the
  // reduction reads.
  CompiledModel summed =
      compile(cacheUpdate(true), test::testOptions(true, target));
  CHECK(summed.program().buffers[summed.program().outputs[0]].updatesInput ==
        -1);
}

} // namespace

TEST_CASE("a cache update may write its input in place", "[inplace]") {
  checkMarks(Target::Cpu);
  // The host run is the same computation either way.
  std::mt19937_64 rng(7);
  Tensor past = randomTensor(DType::F32, kCache, rng, -1, 1);
  Tensor update = randomTensor(DType::F32, kRow, rng, -1, 1);
  Tensor position(DType::I64, {1, 1, 1, 1});
  position.set(0, 5);
  CompiledModel model =
      compile(cacheUpdate(false), test::testOptions(true, Target::Cpu));
  std::vector<Tensor> out = model.run({past, update, position});
  Tensor expected = expectedUpdate(past, update, 5);
  CHECK(out[0].bytes == expected.bytes);
}

TEST_CASE("a device run updates a cache in place", "[inplace][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkMarks(Target::Cuda);
  CompiledModel model =
      compile(cacheUpdate(false), test::testOptions(true, Target::Cuda));
  std::mt19937_64 rng(11);
  Tensor past = randomTensor(DType::F32, kCache, rng, -1, 1);
  test::DeviceCopy cache(past), update(Tensor(DType::F32, kRow)),
      position(Tensor(DType::I64, {1, 1, 1, 1}));
  Tensor expected = past;
  // Three steps through one buffer, as a decode loop writes its cache
  // (the CUDA graph of this binding replayed after the first).
  for (int64_t step : {3, 4, 15}) {
    Tensor row = randomTensor(DType::F32, kRow, rng, -1, 1);
    Tensor at(DType::I64, {1, 1, 1, 1});
    at.set(0, double(step));
    update.upload(row);
    position.upload(at);
    model.runOnDevice({cache.tensor(), update.tensor(), position.tensor()},
                      {cache.tensor()});
    expected = expectedUpdate(expected, row, step);
    INFO("step " << step);
    CHECK(cache.download().bytes == expected.bytes);
  }
  // Overlaps the compiler did not mark are refused, naming both tensors.
  const std::string present =
      model.program().buffers[model.program().outputs[0]].name;
  test::DeviceCopy other(past);
  CHECK_THROWS_WITH(
      model.runOnDevice({cache.tensor(), update.tensor(), position.tensor()},
                        {cache.tensor(16)}),
      Catch::Contains("output '" + present + "' overlaps input 'past'") &&
          Catch::Contains("only at the input's own address"));
  CHECK_THROWS_WITH(
      model.runOnDevice({other.tensor(), update.tensor(), position.tensor()},
                        {DeviceTensor{DType::F32, kCache, update.address}}),
      Catch::Contains("overlaps input 'update'") &&
          Catch::Contains("does not update that input in place"));
}
