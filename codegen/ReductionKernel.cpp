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
/// symbols, and where each load starts in row `row` (column schedules: in
/// outer point `o`). The kept dims may be symbolic anywhere, and a load may
/// repeat along some of them (a `[1, seq, C]` position table beside
/// `[batch, seq, C]`): its offset divides the index by the run's sizes.
/// The loads' static strides along the kept dims become what the symbolic
/// strides are multiples of at every size (fixed factors, declared
/// multiples), which the vector width may rely on.
///
/// The reduced points may be symbolic too (a softmax over a sequence's
/// keys, a mean over it) where only the outermost reduced dim is: a point's
/// offset within the reduced dims is then the same expression at every
/// size (ReductionPlan::symbolicRowLength). Rows need the reduced dims
/// innermost; columns need fixed inner dims.
static LogicalResult planSymbolicDims(ReductionPlan &plan,
                                      const SymbolicDims &symbolic) {
  Block &body = plan.fusion.getBody().front();
  fusec::SymbolicShape space;
  for (Operation &op : body.without_terminator())
    if (auto reduction = dyn_cast<ReductionOpInterface>(&op)) {
      space = symbolic.shapeOf(reduction.getReducedOperand());
      break;
    }
  const std::vector<fusec::DimSymbol> &symbols = symbolic.symbols();
  const bool column = plan.schedule == ReductionSchedule::Column;
  auto unsupported = [&]() {
    // "batchx[seq]x8": the reduced dims in [].
    std::string text;
    for (size_t d = 0; d < space.size(); ++d) {
      std::string dim = space[d].format(symbols);
      text += (d ? "x" : "") + (plan.space.reduced[d] ? "[" + dim + "]" : dim);
    }
    return plan.fusion.emitError()
           << "codegen: a reduction over " << text << " ";
  };
  fusec::SymbolicShape rows, reduced;
  std::optional<size_t> firstReduced, symbolicReduced;
  for (size_t d = 0; d < space.size(); ++d) {
    if (!plan.space.reduced[d]) {
      rows.push_back(space[d]);
      continue;
    }
    reduced.push_back(space[d]);
    firstReduced = firstReduced.value_or(d);
    if (!space[d].isStatic() && !symbolicReduced)
      symbolicReduced = d;
  }
  DimGroup outer, reducedGroup, inner;
  columnGroups(plan.space, outer, reducedGroup, inner);
  if (column)
    for (size_t d : inner.dims)
      if (!space[d].isStatic())
        return unsupported() << "has the symbolic inner dim " << d
                             << "; a column reduction takes symbolic outer "
                                "and reduced dims only";
  if (symbolicReduced) {
    for (size_t d = *firstReduced; !column && d < space.size(); ++d)
      if (!plan.space.reduced[d] &&
          space[d] != fusec::SymbolicSize::constant(1))
        return unsupported()
               << "keeps dim " << d << " after the symbolic reduced dim "
               << *symbolicReduced
               << "; a symbolic row length needs the reduced "
                  "dims innermost";
    for (size_t d = *symbolicReduced + 1; d < space.size(); ++d)
      if (!space[d].isStatic())
        return unsupported()
               << "has symbolic dims " << *symbolicReduced << " and " << d
               << " in its reduced points; only the outermost "
                  "reduced dim may be symbolic";
    fusec::SymbolicSize length = fusec::symbolicElements(reduced);
    plan.symbolicRowLength = length;
    plan.rowLengthMultiple = std::max<int64_t>(1, length.knownDivisor(symbols));
    plan.rowMayBeEmpty = llvm::any_of(
        length.symbols, [&](int s) { return symbols[s].min == 0; });
  }
  auto outerPart = [&](const fusec::SymbolicShape &spaceStrides) {
    fusec::SymbolicShape shape, strides;
    for (size_t d : outer.dims) {
      shape.push_back(space[d]);
      strides.push_back(spaceStrides[d]);
    }
    return broadcastOffsetExpression("o", shape, strides, "int64_t");
  };
  for (Load &load : plan.loads) {
    fusec::SymbolicShape shape =
        symbolic.shapeOf(body.getArgument(load.argument));
    // Read against the whole space, or (reduced dims dropped) the rows.
    bool againstRows = load.targetRank != space.size();
    fusec::SymbolicShape strides =
        fusec::broadcastStrides(shape, againstRows ? rows : space);
    fusec::SymbolicShape spaceStrides, rowStrides;
    for (size_t d = 0, k = 0; d < space.size(); ++d) {
      if (plan.space.reduced[d]) {
        spaceStrides.push_back(againstRows ? fusec::SymbolicSize::constant(0)
                                           : strides[d]);
        continue;
      }
      const fusec::SymbolicSize &stride = strides[againstRows ? k : d];
      spaceStrides.push_back(stride);
      rowStrides.push_back(stride);
      load.strides[d] = stride.knownDivisor(symbols);
      ++k;
    }
    if (column)
      plan.symbolicOuterOffsets.push_back(outerPart(spaceStrides));
    else
      plan.symbolicRowOffsets.push_back(
          broadcastOffsetExpression("row", rows, rowStrides, "int64_t"));
  }
  plan.symbolicRows = fusec::symbolicElements(rows);
  for (Operation &op : body.without_terminator())
    if (auto size = dyn_cast<DimSizeOp>(op)) {
      std::optional<fusec::SymbolicSize> value =
          symbolic.sizeNamed(size.getSymbols(), size.getFactor());
      if (!value)
        return op.emitError() << "codegen: " << describeOp(&op)
                              << " names a symbol the program lacks";
      plan.sizeValues.push_back(
          {size.getResult(), "(" + value->cExpression("fusec_dims") + ")"});
    }
  if (column) {
    plan.symbolicOutputOuterOffset = outerPart(fusec::rowMajorStrides(space));
    fusec::SymbolicShape outerShape;
    for (size_t d : outer.dims)
      outerShape.push_back(space[d]);
    plan.symbolicOuter = fusec::symbolicElements(outerShape);
  }
  return success();
}

FailureOr<fusec::KernelDesc>
buildReductionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     const MathFunctionMap *f32Functions, std::string *params,
                     const SymbolicDims *symbolic, size_t dimCount) {
  FailureOr<ReductionPlan> plan = ReductionPlan::analyze(fusion);
  if (failed(plan))
    return failure();
  if (symbolic && failed(planSymbolicDims(*plan, *symbolic)))
    return failure();
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
  if (plan->symbolicRows) {
    desc.readsDimSizes = true;
    // Blocks for the run's rows, or its column tiles.
    if (target == fusec::Target::Cuda && !schedule.params.column)
      desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
          *plan->symbolicRows,
          std::max<int64_t>(1, schedule.params.rowsPerBlock)};
    else if (target == fusec::Target::Cuda)
      desc.dynamicGrid = fusec::KernelDesc::DynamicGrid{
          *plan->symbolicOuter *
              fusec::SymbolicSize::constant(schedule.params.innerTiles),
          1};
  }
  return desc;
}

} // namespace fuse
