//===- ReductionSchedule.cpp - Reduction regions: analysis, params -------===//

#include "codegen/schedule/ReductionSchedule.h"

#include "ir/TypeUtils.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse::reduction {

namespace {

/// Lanes of the C++ reduction loops: one AVX-512 vector of f32.
constexpr int64_t kCpuLanes = 16;
/// C++ rows up to this long keep values a later pass needs in a row buffer
/// on the stack.
constexpr int64_t kCpuMaxKeptRow = 16384;
/// Inner columns per C++ column-reduction tile.
constexpr int64_t kCpuColumnTile = 256;
/// CUDA row schedule: rows of at most this many vectors get a warp each.
constexpr int64_t kWarpRowVectors = 128;
/// Warps per block in the warp-per-row schedule.
constexpr unsigned kRowsPerWarpBlock = 4;
/// CUDA row schedule: each thread handles about this many vectors per row.
constexpr int64_t kVectorsPerThread = 4;
/// CUDA rows of symbolic length: threads per row at most. The schedule is
/// made for the longest row; a shorter one leaves threads idle, and a
/// block of 1024 for each row of a few hundred is mostly idle.
constexpr int64_t kSymbolicRowThreads = 256;
/// ... and steps unrolled (and held in registers) at most: longer maxima
/// loop over the run's steps instead.
constexpr int64_t kSymbolicRowUnrolledSteps = 8;
/// Values per thread held in registers across passes, at most.
constexpr int64_t kMaxCachedPerThread = 64;
/// CUDA column schedule: a block is 32 inner columns x 8 reduced rows, and
/// the reduced dims are split so that about this many blocks run.
constexpr unsigned kColumnTile = 32, kColumnRows = 8;
constexpr int64_t kColumnTargetBlocks = 1024;
/// Rows of the column schedule's loop unrolled: loads in flight per thread.
constexpr int64_t kColumnUnroll = 8;

} // namespace

std::optional<Shape> spaceStrides(const ReductionSpace &space,
                                  const Shape &shape, const Shape &target) {
  if (!fusec::broadcastsTo(shape, target))
    return std::nullopt;
  Shape targetStrides = fusec::broadcastStrides(shape, target);
  Shape strides(space.full.size(), 0);
  if (target.size() == space.full.size()) {
    for (size_t d = 0; d < space.full.size(); ++d)
      if (!space.reduced[d] || target == space.full)
        strides[d] = targetStrides[d];
    return strides;
  }
  // The reduced dims were dropped: target dims are the kept dims.
  size_t t = 0;
  for (size_t d = 0; d < space.full.size(); ++d)
    if (!space.reduced[d])
      strides[d] = targetStrides[t++];
  return strides;
}

LogicalResult ReductionPlan::addLoad(BlockArgument arg, Value boundTo,
                                     const Shape &target) {
  Shape shape = toShape(cast<RankedTensorType>(arg.getType()));
  ValueRole role = space.roleOf(target);
  std::optional<Shape> strides = role == ValueRole::Unrelated
                                     ? std::nullopt
                                     : spaceStrides(space, shape, target);
  if (!strides)
    return fusion.emitError()
           << "codegen: region input #" << arg.getArgNumber() << " of shape "
           << fusec::formatShape(shape) << " is read as "
           << fusec::formatShape(target)
           << ", which is not in the reduction space " << space.describe();
  Load load;
  load.argument = arg.getArgNumber();
  load.dtype = dtypeOf(arg.getType());
  load.strides = *strides;
  load.targetRank = target.size();
  bool alongReduced = false, any = false;
  for (size_t d = 0; d < space.full.size(); ++d) {
    any |= load.strides[d] != 0;
    alongReduced |= space.reduced[d] && load.strides[d] != 0;
  }
  load.kind = !any ? Load::Uniform : alongReduced ? Load::Full : Load::Reduced;
  load.variable = "a" + std::to_string(loads.size());
  loadOf[boundTo] = loads.size();
  loads.push_back(load);
  return success();
}

FailureOr<ReductionPlan> ReductionPlan::analyze(FusionOp fusion) {
  ReductionPlan plan;
  plan.fusion = fusion;
  Block &body = fusion.getBody().front();
  bool found = false;
  for (Operation &op : body.without_terminator())
    if (auto reduction = dyn_cast<ReductionOpInterface>(&op)) {
      ReductionSpace space = ReductionSpace::of(reduction);
      if (found && space != plan.space)
        return op.emitError() << "codegen: " << describeOp(&op) << " reduces "
                              << space.describe() << " but its region reduces "
                              << plan.space.describe();
      plan.space = space;
      found = true;
    }
  if (!found)
    return fusion.emitError("codegen: a reduction region without reductions");
  plan.schedule = plan.space.schedule();

  // Region inputs: read through each broadcast of them (its target says
  // how: a [4096] weight broadcast over rows is not a per-row value even
  // where the space is 4096x[4096]), and directly by their own shape.
  for (BlockArgument arg : body.getArguments()) {
    Shape shape = toShape(cast<RankedTensorType>(arg.getType()));
    std::optional<Shape> directTarget;
    for (Operation *user : arg.getUsers()) {
      Shape target =
          toShape(cast<RankedTensorType>(user->getResult(0).getType()));
      if (isa<BroadcastToOp>(user)) {
        if (failed(plan.addLoad(arg, user->getResult(0), target)))
          return failure();
        continue;
      }
      // Read as it is, or implicitly broadcast to its user's shape.
      if (plan.space.roleOf(shape) != ValueRole::Unrelated)
        target = shape;
      if (directTarget && *directTarget != target)
        return fusion.emitError()
               << "codegen: region input #" << arg.getArgNumber()
               << " is broadcast implicitly to two shapes";
      if (!directTarget && failed(plan.addLoad(arg, arg, target)))
        return failure();
      directTarget = target;
    }
  }

  for (Operation &op : body.without_terminator()) {
    Value result = op.getResult(0);
    // Constants and symbolic sizes: the same at every point.
    if (isa<ConstantOp, DimSizeOp>(op)) {
      plan.avail[result] = 0;
      continue;
    }
    if (plan.loadOf.count(result)) {
      plan.avail[result] = 0;
      continue;
    }
    ValueRole role =
        plan.space.roleOf(cast<RankedTensorType>(result.getType()).getShape());
    if (role == ValueRole::Unrelated)
      return op.emitError() << "codegen: " << describeOp(&op) << " computes "
                            << cast<RankedTensorType>(result.getType())
                            << ", which is not in the reduction space "
                            << plan.space.describe();
    plan.roles[result] = role;
    unsigned level = 0;
    for (Value operand : op.getOperands())
      level = std::max(level, plan.avail.lookup(operand));
    if (auto reduction = dyn_cast<ReductionOpInterface>(&op)) {
      ++level;
      plan.reductions.push_back(
          {&op, reduction.getCombiner(), dtypeOf(result.getType()), level,
           "acc" + std::to_string(plan.reductions.size())});
      plan.numLevels = std::max(plan.numLevels, level);
    } else if (auto kind = dyn_cast<FusionKindOpInterface>(op);
               !kind || (kind.getFusionKind() != FusionKind::Elementwise &&
                         kind.getFusionKind() != FusionKind::Broadcast)) {
      return op.emitError() << "codegen: " << describeOp(&op)
                            << " cannot be part of a reduction kernel";
    }
    plan.avail[result] = level;
  }
  for (Value value : fusion.getYield().getValues()) {
    bool full =
        plan.space.roleOf(cast<RankedTensorType>(value.getType()).getShape()) ==
        ValueRole::Full;
    plan.outputs.push_back({value, dtypeOf(value.getType()), full});
  }
  if (plan.schedule == ReductionSchedule::Column) {
    // Column kernels have reduced values only after the last reduced row.
    if (plan.numLevels > 1)
      return fusion.emitError("codegen: a column reduction whose operand "
                              "needs another reduction's result");
    for (auto [value, role] : plan.roles)
      if (role == ValueRole::Full && plan.avail.lookup(value) > 0)
        return fusion.emitError(
            "codegen: a column reduction's result is broadcast back");
  }
  return plan;
}

SmallVector<Operation *>
ReductionPlan::fullSlice(ArrayRef<Value> roots,
                         const llvm::DenseSet<Value> *available) const {
  llvm::SmallPtrSet<Operation *, 32> needed;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (loadOf.count(value) || isa<BlockArgument>(value) ||
        (available && available->contains(value)))
      continue;
    Operation *op = value.getDefiningOp();
    if (!isa<ConstantOp>(op) && roles.lookup(value) != ValueRole::Full)
      continue; // a reduced value: computed once per row
    if (!needed.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      worklist.push_back(operand);
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : fusion.getBody().front().without_terminator())
    if (needed.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

SmallVector<Operation *> ReductionPlan::reducedOpsAt(unsigned level) const {
  SmallVector<Operation *> ops;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    Value result = op.getResult(0);
    if (isa<ConstantOp, DimSizeOp, ReductionOpInterface>(op) ||
        loadOf.count(result))
      continue;
    if (roles.lookup(result) == ValueRole::Reduced &&
        avail.lookup(result) == level)
      ops.push_back(&op);
  }
  return ops;
}

std::vector<Value> ReductionPlan::fullOutputs() const {
  std::vector<Value> values;
  for (const Output &output : outputs)
    if (output.full)
      values.push_back(output.value);
  return values;
}

std::vector<Value> ReductionPlan::reductionOperands(unsigned level) const {
  std::vector<Value> values;
  for (const ReductionInfo &reduction : reductions)
    if (reduction.level == level)
      values.push_back(reduction.op->getOperand(0));
  return values;
}

std::vector<unsigned> ReductionPlan::loadsOf(ArrayRef<Operation *> ops,
                                             ArrayRef<Value> roots) const {
  llvm::SetVector<unsigned> used;
  auto visit = [&](Value value) {
    auto it = loadOf.find(value);
    if (it != loadOf.end() && loads[it->second].kind == Load::Full)
      used.insert(it->second);
  };
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      visit(operand);
  for (Value root : roots)
    visit(root);
  std::vector<unsigned> sorted(used.begin(), used.end());
  llvm::sort(sorted);
  return sorted;
}

PassSlices PassSlices::plan(const ReductionPlan &plan,
                            const std::vector<std::vector<Value>> &roots,
                            bool keepValues) {
  PassSlices result;
  result.keptUses.resize(roots.size());
  llvm::DenseMap<Value, unsigned> computedIn;
  llvm::DenseSet<Value> available;
  for (size_t p = 0; p < roots.size(); ++p) {
    result.slices.push_back(
        plan.fullSlice(roots[p], keepValues ? &available : nullptr));
    auto reuse = [&](Value value) {
      if (!available.contains(value))
        return;
      result.kept.insert({value, computedIn.lookup(value)});
      result.keptUses[p].insert(value);
    };
    for (Operation *op : result.slices.back())
      for (Value operand : op->getOperands())
        reuse(operand);
    for (Value root : roots[p])
      reuse(root);
    result.loads.push_back(plan.loadsOf(result.slices.back(), roots[p]));
    if (keepValues)
      for (Operation *op : result.slices.back())
        if (!isa<ConstantOp, CastOp>(op) &&
            computedIn.try_emplace(op->getResult(0), p).second)
          available.insert(op->getResult(0));
  }
  return result;
}

std::optional<OnlineSoftmax> findOnlineSoftmax(const ReductionPlan &plan) {
  for (const ReductionInfo &sum : plan.reductions) {
    if (sum.combiner != ReductionCombiner::Sum ||
        (sum.dtype != DType::F32 && sum.dtype != DType::F64) ||
        llvm::count_if(plan.reductions, [&](const ReductionInfo &other) {
          return other.level == sum.level;
        }) != 1)
      continue;
    auto exp = sum.op->getOperand(0).getDefiningOp<ExpOp>();
    auto sub = exp ? exp.getOperand().getDefiningOp<SubOp>() : SubOp();
    if (!sub)
      continue;
    Value maxValue = sub.getRhs();
    if (auto broadcast = maxValue.getDefiningOp<BroadcastToOp>())
      maxValue = broadcast.getOperand();
    const ReductionInfo *max = nullptr;
    for (const ReductionInfo &candidate : plan.reductions)
      if (candidate.op->getResult(0) == maxValue &&
          candidate.combiner == ReductionCombiner::Max &&
          candidate.dtype == sum.dtype && candidate.level + 1 == sum.level &&
          candidate.op->getOperand(0) == sub.getLhs())
        max = &candidate;
    if (!max)
      continue;
    bool readsOnlyTheMax = true;
    for (Operation *op : plan.fullSlice({exp.getResult()}))
      for (Value operand : op->getOperands())
        if (operand != maxValue &&
            plan.roles.lookup(operand) == ValueRole::Reduced &&
            plan.avail.lookup(operand) >= max->level)
          readsOnlyTheMax = false;
    if (readsOnlyTheMax)
      return OnlineSoftmax{max, &sum};
  }
  return std::nullopt;
}

bool readsVectors(const Shape &strides, int64_t width,
                  const DimGroup &contiguous,
                  std::initializer_list<const DimGroup *> others) {
  if (width == 1 || !contiguous.contiguous(strides))
    return false;
  for (const DimGroup *group : others)
    for (size_t d : group->dims)
      if (strides[d] % width != 0)
        return false;
  return true;
}

void rowGroups(const ReductionSpace &space, DimGroup &rows, DimGroup &cols) {
  for (size_t d = 0; d < space.full.size(); ++d) {
    DimGroup &group = space.reduced[d] ? cols : rows;
    group.dims.push_back(d);
    group.shape.push_back(space.full[d]);
  }
}

void columnGroups(const ReductionSpace &space, DimGroup &outer,
                  DimGroup &reduced, DimGroup &inner) {
  size_t first = space.full.size(), last = 0;
  for (size_t d = 0; d < space.full.size(); ++d)
    if (space.reduced[d] && space.full[d] != 1) {
      first = std::min(first, d);
      last = d;
    }
  for (size_t d = 0; d < space.full.size(); ++d) {
    DimGroup &group = d < first ? outer : d <= last ? reduced : inner;
    // A reduced dim of 1 outside the run still has coordinate 0.
    group.dims.push_back(d);
    group.shape.push_back(space.full[d]);
  }
}

Shape outputStrides(const ReductionPlan &plan) {
  Shape strides = fusec::rowMajorStrides(plan.space.full);
  if (plan.symbolicRowLength)
    for (size_t d = 0; d < strides.size(); ++d)
      if (!plan.space.reduced[d])
        strides[d] = plan.rowLengthMultiple;
  return strides;
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

namespace {

/// The passes of the row schedule: one per level of reductions, then one
/// storing the full outputs.
std::vector<RowPass> rowPasses(const ReductionPlan &plan) {
  std::vector<RowPass> passes;
  for (unsigned level = 1; level <= plan.numLevels; ++level) {
    RowPass pass;
    pass.roots = plan.reductionOperands(level);
    for (const ReductionInfo &reduction : plan.reductions)
      if (reduction.level == level)
        pass.reductions.push_back(&reduction);
    passes.push_back(pass);
  }
  if (!plan.fullOutputs().empty()) {
    RowPass pass;
    pass.roots = plan.fullOutputs();
    pass.storesOutputs = true;
    passes.push_back(pass);
  }
  return passes;
}

std::vector<std::vector<Value>> rootsOf(const std::vector<RowPass> &passes) {
  std::vector<std::vector<Value>> roots;
  for (const RowPass &pass : passes)
    roots.push_back(pass.roots);
  return roots;
}

/// C++ rows: values a pass computes that a later pass needs again are kept
/// in a row buffer (softmax's exp(x - max)) when rows are short enough.
void scheduleCppRows(const ReductionPlan &plan, ScheduledReduction &s) {
  ReductionParams &p = s.params;
  DimGroup rows, cols;
  rowGroups(plan.space, rows, cols);
  p.rows = rows.size();
  p.rowLength = cols.size();
  p.lanes = kCpuLanes;
  p.keepValues = p.rowLength > 0 && p.rowLength <= kCpuMaxKeptRow;
  p.parallel = p.rows * p.rowLength >= kCpuParallelThreshold && p.rows > 1;
  s.passes = rowPasses(plan);
  s.slices = PassSlices::plan(plan, rootsOf(s.passes), p.keepValues);
}

void scheduleCudaRows(const ReductionPlan &plan, ScheduledReduction &s) {
  ReductionParams &p = s.params;
  DimGroup rows, cols;
  rowGroups(plan.space, rows, cols);
  const int64_t numRows = rows.size(), length = cols.size();
  p.rows = numRows;
  p.rowLength = length;
  s.passes = rowPasses(plan);
  std::vector<std::vector<Value>> passRoots = rootsOf(s.passes);
  s.slices = PassSlices::plan(plan, passRoots, /*keepValues=*/true);
  p.keepValues = true;

  // 16-byte accesses when every row starts aligned for them.
  size_t widest = 1;
  for (const std::vector<unsigned> &used : s.slices.loads)
    for (unsigned index : used)
      widest = std::max(widest, fusec::dtypeBytes(plan.loads[index].dtype));
  for (const Output &output : plan.outputs)
    if (output.full)
      widest = std::max(widest, fusec::dtypeBytes(output.dtype));
  int64_t width = std::min<int64_t>(8, 16 / widest);
  if (length % width != 0 ||
      (plan.symbolicRowLength && plan.rowLengthMultiple % width != 0))
    width = 1;
  const int64_t vectors = (length + width - 1) / width;
  const bool warpPerRow = vectors <= kWarpRowVectors;
  int64_t threads = 32;
  if (!warpPerRow) {
    // 16-bit rows (8 per access) get more threads and fewer steps each:
    // more loads in flight per row for the same bytes.
    int64_t perThread = width == 8 ? kVectorsPerThread / 2 : kVectorsPerThread;
    threads = 64;
    int64_t most = plan.symbolicRowLength ? kSymbolicRowThreads : 1024;
    while (threads < most && threads * perThread < vectors)
      threads *= 2;
  }
  const int64_t steps = (vectors + threads - 1) / threads;

  // Values a pass computes that a later pass needs again stay in
  // registers (softmax's exp(x - max) is computed once, not twice), and
  // so do loads that two passes read, when they all fit.
  auto planCaches = [&]() -> bool {
    std::vector<int> uses(plan.loads.size(), 0);
    for (const std::vector<unsigned> &used : s.slices.loads)
      for (unsigned index : used)
        ++uses[index];
    int64_t arrays = llvm::count_if(uses, [](int n) { return n > 1; }) +
                     static_cast<int64_t>(s.slices.kept.size());
    bool fits = steps > 0 && arrays * steps * width <= kMaxCachedPerThread &&
                (!plan.symbolicRowLength || steps <= kSymbolicRowUnrolledSteps);
    p.cachedLoads.clear();
    for (size_t i = 0; i < plan.loads.size(); ++i)
      if (fits && uses[i] > 1)
        p.cachedLoads.push_back(i);
    return fits;
  };
  // Rows that do not fit in registers are read from memory once per pass:
  // softmax's max and sum share one pass (online softmax).
  if (!planCaches()) {
    // (Not for empty rows: their sum of exp is 0, but the online state
    // cannot tell them from rows of -inf, whose sum is NaN.)
    if (steps > 0 && !plan.rowMayBeEmpty)
      s.online = findOnlineSoftmax(plan);
    if (s.online) {
      s.passes.erase(s.passes.begin() + (s.online->sum->level - 1));
      passRoots.erase(passRoots.begin() + (s.online->sum->level - 1));
    }
    s.slices = PassSlices::plan(plan, passRoots, /*keepValues=*/false);
    p.keepValues = false;
    planCaches();
  }
  p.onlineSoftmax = s.online.has_value();
  p.vectorWidth = width;
  p.warpPerRow = warpPerRow;
  p.threadsPerRow = threads;
  p.steps = steps;
  // (Rows held in registers that the block's steps cover exactly need
  // no guard: a branch per step is a cost where 16-bit rows are bound
  // by instruction issue. Long rows keep it: without it their many
  // steps unroll too far (H200, softmax_f32_512x131072: 60.3% of copy
  // with the guard, 37.8% without).)
  p.stepGuard = s.online || length % (threads * width) != 0 ||
                plan.symbolicRowLength.has_value();
  p.runtimeSteps =
      plan.symbolicRowLength && p.cachedLoads.empty() && s.slices.kept.empty();
  p.rowsPerBlock = warpPerRow ? kRowsPerWarpBlock : 1;
  p.blockX =
      warpPerRow ? 32 * kRowsPerWarpBlock : static_cast<unsigned>(threads);
  p.gridX = std::max<int64_t>(
      1, warpPerRow ? (numRows + kRowsPerWarpBlock - 1) / kRowsPerWarpBlock
                    : numRows);
}

/// Every full value of a column schedule is a prologue: computed per
/// reduced row.
void planColumnPrologue(const ReductionPlan &plan, ScheduledReduction &s) {
  s.columnRoots = plan.reductionOperands(1);
  std::vector<Value> fullOutputs = plan.fullOutputs();
  s.columnRoots.insert(s.columnRoots.end(), fullOutputs.begin(),
                       fullOutputs.end());
  s.columnSlice = plan.fullSlice(s.columnRoots);
  s.columnLoads = plan.loadsOf(s.columnSlice, s.columnRoots);
}

void scheduleCppColumns(const ReductionPlan &plan, ScheduledReduction &s) {
  ReductionParams &p = s.params;
  DimGroup outer, reduced, inner;
  columnGroups(plan.space, outer, reduced, inner);
  p.outer = outer.size();
  p.reduced = reduced.size();
  p.inner = inner.size();
  p.columnTile = kCpuColumnTile;
  p.innerTiles = (inner.size() + kCpuColumnTile - 1) / kCpuColumnTile;
  p.tiles = outer.size() * p.innerTiles;
  p.parallel = fusec::numElements(plan.space.full) >= kCpuParallelThreshold &&
               p.tiles > 1;
  planColumnPrologue(plan, s);
}

void scheduleCudaColumns(const ReductionPlan &plan, ScheduledReduction &s) {
  ReductionParams &p = s.params;
  DimGroup outer, reduced, inner;
  columnGroups(plan.space, outer, reduced, inner);
  const int64_t innerSize = inner.size(), reducedSize = reduced.size();
  p.outer = outer.size();
  p.reduced = reducedSize;
  p.inner = innerSize;
  planColumnPrologue(plan, s);

  // Each thread owns `width` adjacent inner columns: 16-byte loads where
  // every row of them starts aligned.
  size_t widest = 1;
  for (unsigned index : s.columnLoads)
    widest = std::max(widest, fusec::dtypeBytes(plan.loads[index].dtype));
  int64_t width = std::min<int64_t>(4, 16 / widest);
  if (innerSize % width != 0)
    width = 1;
  const int64_t tileColumns = kColumnTile * width;
  const int64_t innerTiles = (innerSize + tileColumns - 1) / tileColumns;
  const int64_t tiles = outer.size() * innerTiles;
  int64_t splits = std::clamp<int64_t>(
      kColumnTargetBlocks / std::max<int64_t>(tiles, 1), 1,
      std::max<int64_t>(1, reducedSize / (4 * kColumnRows)));
  splits = std::min<int64_t>(splits, 1024);
  const int64_t rowsPerSplit =
      std::max<int64_t>(1, (reducedSize + splits - 1) / splits);
  splits =
      std::max<int64_t>(1, (reducedSize + rowsPerSplit - 1) / rowsPerSplit);
  const int64_t lanes = tiles * tileColumns;
  // Scratch: per reduction, one partial per split and column; then one
  // counter per tile.
  if (splits > 1) {
    for (size_t r = 0; r < plan.reductions.size(); ++r) {
      p.partialOffsets.push_back(p.scratchBytes);
      p.scratchBytes += (splits * lanes * 8 + 15) / 16 * 16;
    }
    p.counterOffset = p.scratchBytes;
    p.scratchBytes += tiles * 4;
  }
  p.vectorWidth = width;
  p.columnTile = tileColumns;
  p.innerTiles = innerTiles;
  p.tiles = tiles;
  p.splits = splits;
  p.rowsPerSplit = rowsPerSplit;
  // Splits of whole rows per thread loop a constant count, unrolled so
  // that several loads are in flight per thread: a column sum reads each
  // element once and is bound by how many bytes wait in the memory system.
  p.wholeSplits = !plan.symbolicRowLength && reducedSize % rowsPerSplit == 0 &&
                  rowsPerSplit % (kColumnRows * kColumnUnroll) == 0;
  p.unroll = kColumnUnroll;
  p.blockX = kColumnTile;
  p.blockY = kColumnRows;
  p.gridX = std::max<int64_t>(1, tiles);
  p.gridY = static_cast<unsigned>(splits);
}

} // namespace

ScheduledReduction scheduleReduction(const ReductionPlan &plan,
                                     fusec::Target target) {
  ScheduledReduction s;
  s.params.target = target;
  s.params.column = plan.schedule == ReductionSchedule::Column;
  bool cuda = target == fusec::Target::Cuda;
  if (s.params.column)
    (cuda ? scheduleCudaColumns : scheduleCppColumns)(plan, s);
  else
    (cuda ? scheduleCudaRows : scheduleCppRows)(plan, s);
  return s;
}

fusec::LaunchGeometry launchOf(const ReductionParams &params) {
  fusec::LaunchGeometry launch;
  launch.blockX = params.blockX;
  launch.blockY = params.blockY;
  launch.gridX = params.gridX;
  launch.gridY = params.gridY;
  launch.maxBlocksPerMultiprocessor = 0;
  return launch;
}

std::string ReductionParams::toString() const {
  std::string text;
  auto field = [&](const std::string &key, const std::string &value) {
    text += (text.empty() ? "" : " ") + key + "=" + value;
  };
  auto number = [&](const std::string &key, int64_t value) {
    field(key, std::to_string(value));
  };
  auto flag = [&](const std::string &key, bool value) {
    field(key, value ? "yes" : "no");
  };
  bool cuda = target == fusec::Target::Cuda;
  if (column) {
    number("outer", outer);
    number("reduced", reduced);
    number("inner", inner);
  } else {
    number("rows", rows);
    number("length", rowLength);
  }
  if (!cuda) {
    if (column) {
      number("tile", columnTile);
      number("tiles", tiles);
    } else {
      number("lanes", lanes);
      flag("keep-values", keepValues);
    }
    flag("parallel", parallel);
    return text;
  }
  number("vector", vectorWidth);
  if (column) {
    number("tile", columnTile);
    number("tiles", tiles);
    number("splits", splits);
    number("rows-per-split", rowsPerSplit);
    flag("whole-splits", wholeSplits);
    number("unroll", unroll);
    number("scratch", scratchBytes);
  } else {
    field("per-row", warpPerRow ? "warp" : "block");
    number("threads-per-row", threadsPerRow);
    number("rows-per-block", rowsPerBlock);
    number("steps", steps);
    flag("keep-values", keepValues);
    std::string cached;
    for (unsigned index : cachedLoads)
      cached += (cached.empty() ? "" : ",") + std::to_string(index);
    field("cached-loads", "[" + cached + "]");
    flag("online-softmax", onlineSoftmax);
    flag("step-guard", stepGuard);
    if (runtimeSteps)
      flag("runtime-steps", runtimeSteps);
  }
  field("block", std::to_string(blockX) + "x" + std::to_string(blockY));
  field("grid", std::to_string(gridX) + "x" + std::to_string(gridY));
  return text;
}

size_t ReductionParams::hash() const {
  return llvm::hash_combine(
      static_cast<int>(target), column, rows, rowLength, outer, reduced, inner,
      parallel, lanes, keepValues, vectorWidth, warpPerRow, threadsPerRow,
      rowsPerBlock, steps,
      llvm::hash_combine_range(cachedLoads.begin(), cachedLoads.end()),
      onlineSoftmax, stepGuard, runtimeSteps, columnTile, innerTiles, tiles,
      splits, rowsPerSplit, wholeSplits, unroll,
      llvm::hash_combine_range(partialOffsets.begin(), partialOffsets.end()),
      counterOffset, scratchBytes, blockX, blockY, gridX, gridY);
}

bool ReductionParams::operator==(const ReductionParams &other) const {
  auto fields = [](const ReductionParams &p) {
    return std::tie(p.target, p.column, p.rows, p.rowLength, p.outer, p.reduced,
                    p.inner, p.parallel, p.lanes, p.keepValues, p.vectorWidth,
                    p.warpPerRow, p.threadsPerRow, p.rowsPerBlock, p.steps,
                    p.cachedLoads, p.onlineSoftmax, p.stepGuard, p.runtimeSteps,
                    p.columnTile, p.innerTiles, p.tiles, p.splits,
                    p.rowsPerSplit, p.wholeSplits, p.unroll, p.partialOffsets,
                    p.counterOffset, p.scratchBytes, p.blockX, p.blockY,
                    p.gridX, p.gridY);
  };
  return fields(*this) == fields(other);
}

} // namespace fuse::reduction
