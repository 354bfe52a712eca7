//===- QuantizedMatmulKernel.cpp - The int8-weight GEMV kernel -----------===//
//
// A GEMV with few rows is memory bound on its weights: reading them as int8
// moves half the bytes of bf16. The region's shape, then its schedule
// (schedule/GemvSchedule.h), then the target's printer
// (cpu/GemvCppPrinter.cpp, cuda/GemvCudaPrinter.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/QuantizedMatmulKernel.h"

#include "codegen/GemvEmitter.h"
#include "codegen/RegionKind.h"
#include "ir/TypeUtils.h"

using namespace mlir;

namespace fuse {

namespace {

/// Whether `value` is stored in a constant's buffer (itself or a reshape
/// of it): memory no kernel writes, so a kernel may read it before it
/// waits for the kernel before it.
bool isConstantStorage(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getOperand();
  return value.getDefiningOp<ConstantOp>() != nullptr;
}

} // namespace

FailureOr<fusec::KernelDesc> buildQuantizedMatmulKernel(FusionOp fusion,
                                                        unsigned index,
                                                        fusec::Target target,
                                                        std::string *params) {
  QuantizedMatmulOp gemv;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    if (gemv || !isa<QuantizedMatmulOp>(op))
      return op.emitError() << "codegen: a quantized matmul region holds one "
                               "fuse.quantized_matmul and nothing else";
    gemv = cast<QuantizedMatmulOp>(op);
  }
  Block &body = fusion.getBody().front();
  ValueRange yielded = fusion.getYield().getValues();
  if (!gemv || yielded.size() != 1 || yielded[0] != gemv.getResult() ||
      gemv.getLhs() != body.getArgument(0) ||
      gemv.getWeight() != body.getArgument(1) ||
      gemv.getScale() != body.getArgument(2))
    return fusion.emitError("codegen: a quantized matmul region must take "
                            "(lhs, weight, scale) and yield its result");
  auto lhsType = gemv.getLhs().getType();
  GemvShape shape;
  shape.dtype = dtypeOf(lhsType);
  shape.k = lhsType.getShape().back();
  shape.n = gemv.getWeight().getType().getDimSize(0);
  // Rows of lhs (its batch dims stack into rows), read off the result
  // since k may be 0.
  shape.rows = 1;
  for (int64_t dim : lhsType.getShape().drop_back())
    shape.rows *= dim;

  fusec::KernelDesc desc;
  desc.ops = regionOpNames(fusion);
  desc.name = kernelName("gemv", desc.ops, index);
  desc.schedule = "quantized-gemv";
  ValueRange inputs = fusion.getInputs();
  bool constantWeights =
      isConstantStorage(inputs[1]) && isConstantStorage(inputs[2]);
  GemvParams schedule = scheduleGemv(shape, target, constantWeights);
  if (params)
    *params = schedule.toString();
  desc.source = target != fusec::Target::Cuda
                    ? printCppGemv(shape, schedule, desc.name)
                    : printCudaGemv(shape, schedule, desc.name);
  if (target == fusec::Target::Cuda)
    desc.launch = launchOf(schedule);
  return desc;
}

} // namespace fuse
