//===- LayoutKernel.cpp - Layout regions as kernels ----------------------===//
//
// One kernel per layout op: the region's checks, its schedule
// (schedule/LayoutSchedule.h), then the target's printer
// (cpu/LayoutCppPrinter.cpp, cuda/LayoutCudaPrinter.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/LayoutKernel.h"

#include "codegen/LayoutEmitter.h"
#include "codegen/RegionKind.h"

using namespace mlir;

namespace fuse {

FailureOr<fusec::KernelDesc> buildLayoutKernel(FusionOp fusion, unsigned index,
                                               fusec::Target target,
                                               std::string *params,
                                               const SymbolicDims *symbolic) {
  Operation *layoutOp = nullptr;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (!isa<TransposeOp, SliceOp, ConcatOp, GatherOp, PadOp, ArgMaxOp,
             ArgMinOp>(op))
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " cannot be part of a layout kernel";
    if (layoutOp)
      return op.emitError() << "codegen: a layout region holds one layout op, "
                               "but this one also holds "
                            << describeOp(layoutOp);
    layoutOp = &op;
  }
  if (!layoutOp)
    return fusion.emitError("codegen: a layout region without a layout op");
  ValueRange yielded = fusion.getYield().getValues();
  if (yielded.size() != 1 || yielded[0] != layoutOp->getResult(0))
    return fusion.emitError() << "codegen: a layout region must yield exactly "
                                 "the result of its "
                              << describeOp(layoutOp);

  fusec::KernelDesc desc;
  desc.ops = regionOpNames(fusion);
  desc.name = kernelName("layout", desc.ops, index);
  desc.schedule = "layout";
  LayoutParams schedule = scheduleLayout(layoutOp, target);
  if (params)
    *params = schedule.toString();
  FailureOr<std::string> source =
      target == fusec::Target::Cuda
          ? layout::printCudaLayout(fusion, layoutOp, schedule, desc.name,
                                    symbolic)
          : layout::printCppLayout(fusion, layoutOp, schedule, desc.name,
                                   symbolic);
  if (failed(source))
    return failure();
  desc.source = std::move(*source);
  if (target == fusec::Target::Cuda)
    desc.launch = launchOf(schedule);
  if (symbolic) {
    desc.readsDimSizes = true;
    fusec::SymbolicSize elements =
        fusec::symbolicElements(symbolic->shapeOf(layoutOp->getResult(0)));
    // A block per output takes outputs; the grid-stride loop elements.
    int64_t perBlock = schedule.blockPerOutput ? 1
                                               : int64_t(schedule.blockX) *
                                                     schedule.elementsPerThread;
    if (target == fusec::Target::Cuda)
      desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{elements, perBlock};
  }
  return desc;
}

} // namespace fuse
