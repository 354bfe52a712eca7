//===- ReductionKernel.cpp - Reduction regions as kernels ----------------===//
//
// Analysis and schedule (schedule/ReductionSchedule.h), then the target's
// printer (cpu/ReductionCppPrinter.cpp, cuda/ReductionCudaPrinter.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/ReductionKernel.h"

#include "codegen/ReductionEmitter.h"
#include "codegen/RegionKind.h"

using namespace mlir;

namespace fuse {

using namespace reduction;

FailureOr<fusec::KernelDesc>
buildReductionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     const MathFunctionMap *f32Functions, std::string *params,
                     std::optional<fusec::SymbolicSize> symbolicRows,
                     size_t dimCount) {
  FailureOr<ReductionPlan> plan = ReductionPlan::analyze(fusion);
  if (failed(plan))
    return failure();
  if (symbolicRows && plan->schedule == ReductionSchedule::Column)
    return fusion.emitError()
           << "codegen: a column reduction with symbolic dims is not "
              "supported yet (only rows of fixed length, the symbolic dims "
              "leading)";
  plan->symbolicRows = symbolicRows;
  plan->dimCount = dimCount;
  fusec::KernelDesc desc;
  desc.ops = regionOpNames(fusion);
  std::vector<std::string> computing;
  for (const std::string &op : desc.ops)
    if (op != "broadcast_to" && op != "reshape" && op != "cast")
      computing.push_back(op);
  desc.name = kernelName("fused", computing, index);
  desc.schedule = plan->schedule == ReductionSchedule::Column
                      ? "column-reduction"
                      : "row-reduction";
  ScheduledReduction schedule = scheduleReduction(*plan, target);
  if (params)
    *params = schedule.params.toString();
  FailureOr<std::string> source =
      target == fusec::Target::Cpu
          ? printCppReduction(*plan, schedule, desc.name, desc.ops)
          : printCudaReduction(*plan, schedule, desc.name, desc.ops,
                               f32Functions);
  if (failed(source))
    return failure();
  desc.source = std::move(*source);
  if (target == fusec::Target::Cuda) {
    desc.launch = launchOf(schedule.params);
    desc.scratchBytes = schedule.params.scratchBytes;
  }
  if (symbolicRows) {
    desc.readsDimSizes = true;
    if (target == fusec::Target::Cuda)
      desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
          *symbolicRows, std::max<int64_t>(1, schedule.params.rowsPerBlock)};
  }
  return desc;
}

} // namespace fuse
