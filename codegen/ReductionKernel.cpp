//===- ReductionKernel.cpp - Reduction regions as kernels ----------------===//
//
// Analysis and schedule (schedule/ReductionSchedule.h), then the target's
// printer (cpu/ReductionCppPrinter.cpp, cuda/ReductionCudaPrinter.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/ReductionKernel.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/ReductionEmitter.h"
#include "codegen/RegionKind.h"

using namespace mlir;

namespace fuse {

using namespace reduction;

/// Symbolic programs: the rows (the space's kept dims) as a size of the
/// symbols, and where each load starts in row `row`. The kept dims may be
/// symbolic anywhere, and a load may repeat along some of them (a
/// `[1, seq, C]` position table beside `[batch, seq, C]`): its offset
/// divides `row` by the run's sizes. The loads' static strides along the
/// kept dims become what the symbolic strides are multiples of at every
/// size (fixed factors, declared multiples), which the vector width may
/// rely on.
static fusec::SymbolicSize planSymbolicRows(ReductionPlan &plan,
                                            const SymbolicDims &symbolic) {
  Block &body = plan.fusion.getBody().front();
  fusec::SymbolicShape space;
  for (Operation &op : body.without_terminator())
    if (auto reduction = dyn_cast<ReductionOpInterface>(&op)) {
      space = symbolic.shapeOf(reduction.getReducedOperand());
      break;
    }
  fusec::SymbolicShape rows;
  for (size_t d = 0; d < space.size(); ++d)
    if (!plan.space.reduced[d])
      rows.push_back(space[d]);
  for (Load &load : plan.loads) {
    fusec::SymbolicShape shape =
        symbolic.shapeOf(body.getArgument(load.argument));
    // Read against the whole space, or (reduced dims dropped) the rows.
    bool againstRows = load.targetRank != space.size();
    fusec::SymbolicShape strides =
        fusec::broadcastStrides(shape, againstRows ? rows : space);
    fusec::SymbolicShape rowStrides;
    for (size_t d = 0, k = 0; d < space.size(); ++d) {
      if (plan.space.reduced[d])
        continue;
      const fusec::SymbolicSize &stride = strides[againstRows ? k : d];
      rowStrides.push_back(stride);
      load.strides[d] = stride.knownDivisor(symbolic.symbols());
      ++k;
    }
    plan.symbolicRowOffsets.push_back(
        broadcastOffsetExpression("row", rows, rowStrides, "int64_t"));
  }
  return fusec::symbolicElements(rows);
}

FailureOr<fusec::KernelDesc>
buildReductionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     const MathFunctionMap *f32Functions, std::string *params,
                     const SymbolicDims *symbolic, size_t dimCount) {
  FailureOr<ReductionPlan> plan = ReductionPlan::analyze(fusion);
  if (failed(plan))
    return failure();
  std::optional<fusec::SymbolicSize> symbolicRows;
  if (symbolic)
    symbolicRows = planSymbolicRows(*plan, *symbolic);
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
