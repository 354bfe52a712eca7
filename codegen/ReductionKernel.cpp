//===- ReductionKernel.cpp - Reduction regions as kernels ----------------===//
//
// A region rooted at reductions walks one reduction space: kept dims (one
// result each) and reduced dims. Its values are full (one per point of the
// space) or reduced (one per kept point). Analysis builds the plan: the
// region inputs as loads with strides over the space, the reductions in
// levels (a reduction whose operand needs another reduction's result comes
// a level later), the slice of full ops each pass over the reduced dims
// computes, and the reduced ops computed between passes. Two emitters print
// it, each with its schedule:
//
//   row (reduced dims innermost, or any pattern but column):
//     CUDA: a warp per row for short rows, a block per row with warp
//     shuffles and shared memory for long ones; inputs read once with
//     16-byte loads and held in registers across passes when they fit.
//     C++: rows in parallel (OpenMP), each pass a simd loop into 16 lanes.
//   column ([kept, reduced, kept inner]):
//     CUDA: threads along the inner dims, the reduced dims split across
//     blocks; the last block of a column tile combines the partials in a
//     fixed order and runs the epilogue (one launch, deterministic).
//     C++: tiles of inner columns in parallel, a simd loop per reduced row.
//
//===----------------------------------------------------------------------===//

#include "codegen/ReductionKernel.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/RegionKind.h"
#include "ir/ReductionSpace.h"
#include "ir/TypeUtils.h"

#include "mlir/Support/IndentedOstream.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using fusec::DType;
using fusec::Shape;

namespace fuse {

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
/// Values per thread held in registers across passes, at most.
constexpr int64_t kMaxCachedPerThread = 64;
/// CUDA column schedule: a block is 32 inner columns x 8 reduced rows, and
/// the reduced dims are split so that about this many blocks run.
constexpr unsigned kColumnTile = 32, kColumnRows = 8;
constexpr int64_t kColumnTargetBlocks = 1024;
/// Rows of the column schedule's loop unrolled: loads in flight per thread.
constexpr int64_t kColumnUnroll = 8;

const char *combinerTemplate(ReductionCombiner combiner) {
  switch (combiner) {
  case ReductionCombiner::Sum:
    return "FusecSum";
  case ReductionCombiner::Prod:
    return "FusecProd";
  case ReductionCombiner::Max:
    return "FusecMax";
  case ReductionCombiner::Min:
    return "FusecMin";
  }
  return "FusecSum";
}

/// A region input read at each point of the space.
struct Load {
  unsigned argument;
  DType dtype;
  /// Full: varies along reduced dims; Reduced: one per row; Uniform: one.
  enum Kind { Full, Reduced, Uniform } kind;
  Shape strides; ///< per dim of the space
  std::string variable;
};

struct ReductionInfo {
  Operation *op;
  ReductionCombiner combiner;
  DType dtype;
  unsigned level;
  std::string accumulator;
};

struct Output {
  Value value;
  DType dtype;
  bool full;
};

/// The dims of the space split into groups, with offset expressions of a
/// load within each group.
struct DimGroup {
  std::vector<size_t> dims;
  Shape shape;
  int64_t size() const { return fusec::numElements(shape); }
  /// The part of `strides`' offset from this group's coordinates at linear
  /// index `index` of the group.
  std::string offset(const std::string &index, const Shape &strides) const {
    Shape sub;
    for (size_t d : dims)
      sub.push_back(strides[d]);
    return broadcastOffsetExpression(index, shape, sub);
  }
  /// The group's coordinates are contiguous in `strides` (row-major within
  /// the group, innermost stride 1).
  bool contiguous(const Shape &strides) const {
    int64_t expected = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      if (shape[k] != 1 && strides[dims[k]] != expected)
        return false;
      expected *= shape[k];
    }
    return true;
  }
};

class ReductionPlan {
public:
  static FailureOr<ReductionPlan> analyze(FusionOp fusion);

  mutable FusionOp fusion; // MLIR op handles are not const-correct
  ReductionSpace space;
  ReductionSchedule schedule;
  std::vector<Load> loads;
  DenseMap<Value, unsigned> loadOf; ///< values read by a load
  DenseMap<Value, ValueRole> roles; ///< of every op result
  DenseMap<Value, unsigned> avail;  ///< reductions needed, as a level
  std::vector<ReductionInfo> reductions;
  unsigned numLevels = 0;
  std::vector<Output> outputs;

  /// Full ops (and constants) computing `roots` from loads and reduced
  /// values, in program order.
  /// Values in `available` (kept from an earlier pass) are not recomputed.
  SmallVector<Operation *>
  fullSlice(ArrayRef<Value> roots,
            const llvm::DenseSet<Value> *available = nullptr) const;
  /// Reduced ops (not reductions) ready after `level`, in program order.
  SmallVector<Operation *> reducedOpsAt(unsigned level) const;
  std::vector<Value> fullOutputs() const;
  std::vector<Value> reductionOperands(unsigned level) const;
  /// The loads of full values the slice `ops` (with `roots`) reads.
  std::vector<unsigned> loadsOf(ArrayRef<Operation *> ops,
                                ArrayRef<Value> roots) const;

private:
  LogicalResult addLoad(BlockArgument arg, Value boundTo, const Shape &target);
};

/// Strides over the space of an input of `shape` read as `target` (the
/// space's shape, or its reduced shape with or without the reduced dims).
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
    if (isa<ConstantOp>(op)) {
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
    if (isa<ConstantOp, ReductionOpInterface>(op) || loadOf.count(result))
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

//===----------------------------------------------------------------------===//
// Shared by the emitters
//===----------------------------------------------------------------------===//

/// The passes of a row schedule over the reduced dims: what each computes,
/// and which values one pass computes that a later one needs again (kept
/// in registers or a row buffer rather than recomputed).
struct PassSlices {
  std::vector<SmallVector<Operation *>> slices;
  std::vector<std::vector<unsigned>> loads;    ///< full loads each pass reads
  llvm::MapVector<Value, unsigned> kept;       ///< value -> pass computing it
  std::vector<llvm::DenseSet<Value>> keptUses; ///< per pass

  /// `roots[p]` are what pass p must compute. Conversions are never kept:
  /// redoing one is cheaper than holding its result.
  static PassSlices plan(const ReductionPlan &plan,
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
};

/// Softmax's two reductions over a row: a max of some g, then (alone at the
/// next level) a sum of exp(g - max) that reads no other value of the max's
/// level. Online softmax computes both in one pass over the row.
struct OnlineSoftmax {
  const ReductionInfo *max;
  const ReductionInfo *sum;
};

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

/// Statements of one scope: loads bound, reduced values bound, ops built
/// into lets, lets printed for the target.
class ScopePrinter {
public:
  ScopePrinter(const ReductionPlan &plan, const MathFunctionMap *f32Functions,
               std::string prefix)
      : plan(plan), builder(std::move(prefix)),
        printer(f32Functions, /*roundsEachOp=*/!f32Functions) {}

  void bind(Value value, const std::string &variable) {
    builder.bind(value, variable);
  }
  void divideByReciprocal(Value divisor, const std::string &reciprocal) {
    builder.divideByReciprocal(divisor, reciprocal);
  }
  /// Binds every value a load defines to the load's variable.
  void bindLoads(Load::Kind kind) {
    for (auto [value, index] : plan.loadOf)
      if (plan.loads[index].kind == kind)
        builder.bind(value, plan.loads[index].variable);
  }
  LogicalResult build(ArrayRef<Operation *> ops, ScalarLets &lets) {
    for (Operation *op : ops)
      if (failed(builder.build(*op, lets)))
        return failure();
    return success();
  }
  void print(raw_indented_ostream &os, ArrayRef<ScalarLet> lets) const {
    printer.print(lets, os);
  }
  const std::string &variableOf(Value value) const {
    return builder.variableOf(value);
  }
  bool isBound(Value value) const { return builder.isBound(value); }

private:
  const ReductionPlan &plan;
  ScalarExprBuilder builder;
  ScalarExprPrinter printer;
};

/// The row-level state every emitter tracks: the reduced values known so
/// far (loads, accumulators, reduced ops), as variables at row scope.
struct RowScope {
  std::vector<std::pair<Value, std::string>> bound;
  void bindInto(ScopePrinter &printer) const {
    for (const auto &[value, variable] : bound)
      printer.bind(value, variable);
  }
};

std::string header(const ReductionPlan &plan, const std::string &name,
                   const std::vector<std::string> &ops,
                   const std::string &how) {
  std::string text = "// " + name + ": ";
  for (size_t i = 0; i < ops.size(); ++i)
    text += (i ? " -> " : "") + ops[i];
  return text + " over " + plan.space.describe() + " (reduced dims in []), " +
         how + "\n";
}

/// Whether `width` adjacent elements along `contiguous` are one aligned
/// 16-byte access at every point of the `others` dims.
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

/// Kept dims (rows) and reduced dims (columns) of the row schedule.
void rowGroups(const ReductionSpace &space, DimGroup &rows, DimGroup &cols) {
  for (size_t d = 0; d < space.full.size(); ++d) {
    DimGroup &group = space.reduced[d] ? cols : rows;
    group.dims.push_back(d);
    group.shape.push_back(space.full[d]);
  }
}

/// Outer kept dims, reduced dims and inner kept dims of the column
/// schedule (dims of 1 go wherever they are: their coordinate is 0).
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

/// The stored form of `value`: a cast from f32 to the f16/bf16 it is stored
/// as rounds once at the store instead of twice.
std::string storedValue(const ScopePrinter &printer, Value value, DType dtype) {
  if (auto cast = value.getDefiningOp<CastOp>())
    if ((dtype == DType::F16 || dtype == DType::BF16) &&
        dtypeOf(cast.getOperand().getType()) == DType::F32 &&
        printer.isBound(cast.getOperand()))
      return toStorage(dtype, printer.variableOf(cast.getOperand()));
  return toStorage(dtype, printer.variableOf(value));
}

/// Row-major strides of the space: where a full output element goes.
Shape outputStrides(const ReductionPlan &plan) {
  return fusec::rowMajorStrides(plan.space.full);
}

//===----------------------------------------------------------------------===//
// C++ (OpenMP)
//===----------------------------------------------------------------------===//

/// What both emitters share: reduced ops at row scope, reduced outputs,
/// loads.
class EmitterBase {
protected:
  EmitterBase(const ReductionPlan &plan, const std::string &name,
              const std::vector<std::string> &ops,
              const MathFunctionMap *f32Functions)
      : plan(plan), name(name), ops(ops), f32Functions(f32Functions) {}

  std::string loadExpression(const Load &load, const std::string &offset) {
    return fromStorage(load.dtype, "in" + std::to_string(load.argument) + "[" +
                                       offset + "]");
  }

  /// At the start of a row: the per-row loads, and each full load's row
  /// offset (`aN_row`). Returns the row scope with the per-row and uniform
  /// loads bound.
  RowScope emitRowLoads(raw_indented_ostream &os, const DimGroup &rows) {
    for (const Load &load : plan.loads) {
      std::string rowOffset = rows.offset("row", load.strides);
      if (load.kind == Load::Reduced)
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << loadExpression(load, rowOffset) << ";\n";
      else if (load.kind == Load::Full)
        os << "const int64_t " << load.variable << "_row = " << rowOffset
           << ";\n";
    }
    RowScope scope;
    for (auto [value, index] : plan.loadOf)
      if (plan.loads[index].kind != Load::Full)
        scope.bound.push_back({value, plan.loads[index].variable});
    return scope;
  }

  /// One point of a column schedule: the prologue's statements, the full
  /// outputs stored at `outputOffset`, each accumulator's lane `lane`
  /// combined with its operand.
  void emitColumnStep(raw_indented_ostream &os, ArrayRef<ScalarLet> statements,
                      const ScopePrinter &printer,
                      const std::string &outputOffset,
                      const std::string &lane) {
    printer.print(os, statements);
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      if (plan.outputs[i].full)
        os << "out" << i << "[" << outputOffset << "] = "
           << storedValue(printer, plan.outputs[i].value, plan.outputs[i].dtype)
           << ";\n";
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "[" << lane
         << "] = " << combiner(reduction) << "::combine("
         << reduction.accumulator << "[" << lane << "], "
         << printer.variableOf(reduction.op->getOperand(0)) << ");\n";
  }

  void emitUniformLoads(raw_indented_ostream &os) {
    for (const Load &load : plan.loads)
      if (load.kind == Load::Uniform)
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << loadExpression(load, "0") << ";\n";
  }

  /// Prints the reduced ops ready after `level` at row scope and binds
  /// their results for later scopes.
  LogicalResult emitReducedOps(raw_indented_ostream &os, RowScope &scope,
                               unsigned level) {
    SmallVector<Operation *> ready = plan.reducedOpsAt(level);
    if (ready.empty())
      return success();
    ScopePrinter printer(plan, f32Functions, "r" + std::to_string(level) + "_");
    scope.bindInto(printer);
    ScalarLets statements;
    // Constants the reduced ops use are printed with them.
    SmallVector<Operation *> withConstants;
    for (Operation *op : ready)
      for (Value operand : op->getOperands())
        if (auto constant = operand.getDefiningOp<ConstantOp>())
          if (!llvm::is_contained(withConstants, constant.getOperation()) &&
              !printer.isBound(constant))
            withConstants.push_back(constant);
    withConstants.append(ready.begin(), ready.end());
    if (failed(printer.build(withConstants, statements)))
      return failure();
    printer.print(os, statements);
    for (Operation *op : withConstants)
      scope.bound.push_back(
          {op->getResult(0), printer.variableOf(op->getResult(0))});
    return success();
  }

  void emitReducedOutputs(raw_indented_ostream &os, const RowScope &scope,
                          const std::string &index) {
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      if (plan.outputs[i].full)
        continue;
      std::string variable;
      for (const auto &[value, name] : scope.bound)
        if (value == plan.outputs[i].value)
          variable = name;
      os << "out" << i << "[" << index
         << "] = " << toStorage(plan.outputs[i].dtype, variable) << ";\n";
    }
  }

  static std::string combiner(const ReductionInfo &reduction) {
    return std::string(combinerTemplate(reduction.combiner)) + "<" +
           computeType(reduction.dtype) + ">";
  }

  const ReductionPlan &plan;
  const std::string &name;
  const std::vector<std::string> &ops;
  const MathFunctionMap *f32Functions;
};

class CppEmitter : EmitterBase {
public:
  CppEmitter(const ReductionPlan &plan, const std::string &name,
             const std::vector<std::string> &ops)
      : EmitterBase(plan, name, ops, &cpuMathFunctions()) {}

  FailureOr<std::string> emit() {
    std::string text;
    llvm::raw_string_ostream raw(text);
    raw_indented_ostream os(raw);
    bool column = plan.schedule == ReductionSchedule::Column;
    os << header(plan, name, ops,
                 column ? "column tiles in parallel" : "rows in parallel");
    os << "extern \"C\" void " << name
       << "(const void *const *fusec_inputs, void *const *fusec_outputs) {\n";
    os.indent();
    unsigned numInputs = plan.fusion.getInputs().size();
    for (unsigned i = 0; i < numInputs; ++i) {
      const char *type =
          storageType(dtypeOf(plan.fusion.getInputs()[i].getType()));
      os << "const " << type << " *__restrict in" << i << " = (const " << type
         << " *)fusec_inputs[" << i << "];\n";
    }
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const char *type = storageType(plan.outputs[i].dtype);
      os << type << " *__restrict out" << i << " = (" << type
         << " *)fusec_outputs[" << i << "];\n";
    }
    emitUniformLoads(os);
    if (failed(column ? emitColumns(os) : emitRows(os)))
      return failure();
    os.unindent();
    os << "}\n";
    return text;
  }

private:
  LogicalResult emitRows(raw_indented_ostream &os) {
    DimGroup rows, cols;
    rowGroups(plan.space, rows, cols);
    int64_t numRows = rows.size(), length = cols.size();
    Shape outStrides = outputStrides(plan);
    std::string outRow = rows.offset("row", outStrides);
    auto colOffset = [&](const Shape &strides) {
      return cols.contiguous(strides) ? std::string("col")
                                      : cols.offset("col", strides);
    };

    // One pass per level of reductions, then one storing the full outputs.
    // Values a pass computes that a later pass needs again are kept in a
    // row buffer (softmax's exp(x - max)) when rows are short enough.
    std::vector<std::vector<Value>> passRoots;
    for (unsigned level = 1; level <= plan.numLevels; ++level)
      passRoots.push_back(plan.reductionOperands(level));
    std::vector<Value> fullOutputs = plan.fullOutputs();
    if (!fullOutputs.empty())
      passRoots.push_back(fullOutputs);
    PassSlices passes = PassSlices::plan(
        plan, passRoots, length > 0 && length <= kCpuMaxKeptRow);
    const auto &slices = passes.slices;
    const auto &kept = passes.kept;
    const auto &keptUses = passes.keptUses;
    std::vector<std::string> keptNames;
    for (size_t k = 0; k < kept.size(); ++k)
      keptNames.push_back("k" + std::to_string(k) + "_row");

    if (numRows * length >= kCpuParallelThreshold && numRows > 1)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "for (int64_t row = 0; row < " << numRows << "; ++row) {\n";
    os.indent();
    RowScope scope = emitRowLoads(os, rows);
    for (auto [index, entry] : llvm::enumerate(kept))
      os << computeType(dtypeOf(entry.first.getType())) << " "
         << keptNames[index] << "[" << length << "];\n";
    if (failed(emitReducedOps(os, scope, 0)))
      return failure();

    for (size_t p = 0; p < passRoots.size(); ++p) {
      bool storesOutputs = p == plan.numLevels;
      ScalarLets statements;
      ScopePrinter printer(plan, f32Functions, "v");
      scope.bindInto(printer);
      printer.bindLoads(Load::Full);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (keptUses[p].contains(entry.first))
          printer.bind(entry.first, keptNames[index] + "[col]");
      if (failed(printer.build(slices[p], statements)))
        return failure();
      std::vector<const ReductionInfo *> here;
      for (const ReductionInfo &reduction : plan.reductions)
        if (!storesOutputs && reduction.level == p + 1)
          here.push_back(&reduction);
      for (const ReductionInfo *reduction : here)
        os << computeType(reduction->dtype) << " " << reduction->accumulator
           << "_lanes[" << kCpuLanes << "];\n"
           << "for (int64_t lane = 0; lane < " << kCpuLanes << "; ++lane) "
           << reduction->accumulator
           << "_lanes[lane] = " << combiner(*reduction) << "::identity();\n";
      auto body = [&](const std::string &laneIndex) {
        for (unsigned index : passes.loads[p]) {
          const Load &load = plan.loads[index];
          os << "const " << computeType(load.dtype) << " " << load.variable
             << " = "
             << loadExpression(load, load.variable + "_row + " +
                                         colOffset(load.strides))
             << ";\n";
        }
        printer.print(os, statements);
        for (auto [index, entry] : llvm::enumerate(kept))
          if (entry.second == p)
            os << keptNames[index]
               << "[col] = " << printer.variableOf(entry.first) << ";\n";
        for (const ReductionInfo *reduction : here)
          os << reduction->accumulator << "_lanes[" << laneIndex
             << "] = " << combiner(*reduction) << "::combine("
             << reduction->accumulator << "_lanes[" << laneIndex << "], "
             << printer.variableOf(reduction->op->getOperand(0)) << ");\n";
        if (storesOutputs)
          for (size_t i = 0; i < plan.outputs.size(); ++i)
            if (plan.outputs[i].full)
              os << "out" << i << "[" << outRow << " + "
                 << colOffset(outStrides) << "] = "
                 << storedValue(printer, plan.outputs[i].value,
                                plan.outputs[i].dtype)
                 << ";\n";
      };
      if (storesOutputs) {
        os << "#pragma omp simd\n";
        os << "for (int64_t col = 0; col < " << length << "; ++col) {\n";
        os.indent();
        body("");
        os.unindent();
        os << "}\n";
        continue;
      }
      int64_t whole = length / kCpuLanes * kCpuLanes;
      if (whole > 0) {
        os << "for (int64_t col0 = 0; col0 < " << whole
           << "; col0 += " << kCpuLanes << ") {\n";
        os.indent();
        os << "#pragma omp simd\n";
        os << "for (int64_t lane = 0; lane < " << kCpuLanes << "; ++lane) {\n";
        os.indent();
        os << "const int64_t col = col0 + lane;\n";
        body("lane");
        os.unindent();
        os << "}\n";
        os.unindent();
        os << "}\n";
      }
      if (whole < length) {
        os << "for (int64_t col = " << whole << "; col < " << length
           << "; ++col) {\n";
        os.indent();
        body("col - " + std::to_string(whole));
        os.unindent();
        os << "}\n";
      }
      for (const ReductionInfo *reduction : here) {
        os << computeType(reduction->dtype) << " " << reduction->accumulator
           << " = " << combiner(*reduction) << "::identity();\n";
        os << "for (int64_t lane = 0; lane < " << kCpuLanes << "; ++lane) "
           << reduction->accumulator << " = " << combiner(*reduction)
           << "::combine(" << reduction->accumulator << ", "
           << reduction->accumulator << "_lanes[lane]);\n";
        scope.bound.push_back(
            {reduction->op->getResult(0), reduction->accumulator});
      }
      if (failed(emitReducedOps(os, scope, p + 1)))
        return failure();
    }
    emitReducedOutputs(os, scope, "row");
    os.unindent();
    os << "}\n";
    return success();
  }

  LogicalResult emitColumns(raw_indented_ostream &os) {
    DimGroup outer, reduced, inner;
    columnGroups(plan.space, outer, reduced, inner);
    int64_t innerTiles = (inner.size() + kCpuColumnTile - 1) / kCpuColumnTile;
    int64_t tiles = outer.size() * innerTiles;
    if (fusec::numElements(plan.space.full) >= kCpuParallelThreshold &&
        tiles > 1)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "for (int64_t tile = 0; tile < " << tiles << "; ++tile) {\n";
    os.indent();
    os << "const int64_t o = tile / " << innerTiles << ";\n";
    os << "const int64_t i0 = tile % " << innerTiles << " * " << kCpuColumnTile
       << ";\n";
    os << "const int64_t width = " << inner.size() << " - i0 < "
       << kCpuColumnTile << " ? " << inner.size()
       << " - i0 : " << kCpuColumnTile << ";\n";
    for (const ReductionInfo &reduction : plan.reductions)
      os << computeType(reduction.dtype) << " " << reduction.accumulator << "["
         << kCpuColumnTile << "];\n"
         << "for (int64_t ii = 0; ii < " << kCpuColumnTile << "; ++ii) "
         << reduction.accumulator << "[ii] = " << combiner(reduction)
         << "::identity();\n";
    Shape outStrides = outputStrides(plan);
    auto offsetOf = [&](const Shape &strides, bool alongReduced) {
      std::string offset =
          outer.offset("o", strides) + " + " + inner.offset("i", strides);
      if (alongReduced)
        offset += " + " + reduced.offset("k", strides);
      return offset;
    };
    // Every full value is a prologue: computed per reduced row.
    std::vector<Value> roots = plan.reductionOperands(1);
    std::vector<Value> fullOutputs = plan.fullOutputs();
    roots.insert(roots.end(), fullOutputs.begin(), fullOutputs.end());
    SmallVector<Operation *> slice = plan.fullSlice(roots);
    ScalarLets statements;
    RowScope scope;
    for (auto [value, index] : plan.loadOf)
      if (plan.loads[index].kind != Load::Full)
        scope.bound.push_back({value, plan.loads[index].variable});
    ScopePrinter printer(plan, f32Functions, "v");
    printer.bindLoads(Load::Full);
    scope.bindInto(printer);
    if (failed(printer.build(slice, statements)))
      return failure();
    os << "for (int64_t k = 0; k < " << reduced.size() << "; ++k) {\n";
    os.indent();
    os << "#pragma omp simd\n";
    os << "for (int64_t ii = 0; ii < " << kCpuColumnTile << "; ++ii) {\n";
    os.indent();
    os << "if (ii < width) {\n";
    os.indent();
    os << "const int64_t i = i0 + ii;\n";
    for (const Load &load : plan.loads)
      if (load.kind == Load::Reduced)
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << loadExpression(load, offsetOf(load.strides, false))
           << ";\n";
    for (unsigned index : plan.loadsOf(slice, roots)) {
      const Load &load = plan.loads[index];
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << loadExpression(load, offsetOf(load.strides, true)) << ";\n";
    }
    emitColumnStep(os, statements, printer, offsetOf(outStrides, true), "ii");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    // The epilogue, per output column.
    os << "for (int64_t ii = 0; ii < width; ++ii) {\n";
    os.indent();
    os << "const int64_t i = i0 + ii;\n";
    for (const Load &load : plan.loads)
      if (load.kind == Load::Reduced)
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << loadExpression(load, offsetOf(load.strides, false))
           << ";\n";
    for (const ReductionInfo &reduction : plan.reductions) {
      os << "const " << computeType(reduction.dtype) << " "
         << reduction.accumulator << "_result = " << reduction.accumulator
         << "[ii];\n";
      scope.bound.push_back(
          {reduction.op->getResult(0), reduction.accumulator + "_result"});
    }
    if (failed(emitReducedOps(os, scope, 0)) ||
        failed(emitReducedOps(os, scope, 1)))
      return failure();
    emitReducedOutputs(os, scope,
                       "o * " + std::to_string(inner.size()) + " + i");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }
};

//===----------------------------------------------------------------------===//
// CUDA
//===----------------------------------------------------------------------===//

class CudaEmitter : EmitterBase {
public:
  CudaEmitter(const ReductionPlan &plan, const std::string &name,
              const std::vector<std::string> &ops,
              const MathFunctionMap *f32Functions)
      : EmitterBase(plan, name, ops, f32Functions) {}

  FailureOr<std::string> emit(fusec::LaunchGeometry &launch,
                              int64_t &scratchBytes) {
    std::string text;
    llvm::raw_string_ostream raw(text);
    raw_indented_ostream os(raw);
    LogicalResult result = plan.schedule == ReductionSchedule::Column
                               ? emitColumns(os, launch, scratchBytes)
                               : emitRows(os, launch);
    if (failed(result))
      return failure();
    return text;
  }

private:
  std::string signature(unsigned threads, bool withScratch) {
    std::string text = "extern \"C\" __global__ void __launch_bounds__(" +
                       std::to_string(threads) + ") " + name + "(";
    unsigned numInputs = plan.fusion.getInputs().size();
    std::vector<std::string> params;
    for (unsigned i = 0; i < numInputs; ++i)
      params.push_back(
          std::string("const ") +
          storageType(dtypeOf(plan.fusion.getInputs()[i].getType())) +
          " *__restrict__ in" + std::to_string(i));
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      params.push_back(std::string(storageType(plan.outputs[i].dtype)) +
                       " *__restrict__ out" + std::to_string(i));
    if (withScratch)
      params.push_back("unsigned char *__restrict__ fusec_scratch");
    for (size_t i = 0; i < params.size(); ++i)
      text += (i ? ", " : "") + params[i];
    return text + ") {\n";
  }

  /// One pass of the row schedule over the columns a thread owns.
  struct RowPass {
    std::vector<Value> roots;
    std::vector<const ReductionInfo *> reductions; ///< combined this pass
    bool storesOutputs = false;
  };

  LogicalResult emitRows(raw_indented_ostream &os,
                         fusec::LaunchGeometry &launch) {
    DimGroup rows, cols;
    rowGroups(plan.space, rows, cols);
    const int64_t numRows = rows.size(), length = cols.size();
    Shape outStrides = outputStrides(plan);

    // The passes: one per level of reductions, then the full outputs.
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
    std::vector<std::vector<Value>> passRoots;
    for (const RowPass &pass : passes)
      passRoots.push_back(pass.roots);
    PassSlices planned = PassSlices::plan(plan, passRoots, /*keepValues=*/true);
    const auto &slices = planned.slices;
    const auto &passLoads = planned.loads;
    const auto &kept = planned.kept;
    const auto &keptUses = planned.keptUses;

    // 16-byte accesses when every row starts aligned for them.
    size_t widest = 1;
    for (const std::vector<unsigned> &used : passLoads)
      for (unsigned index : used)
        widest = std::max(widest, fusec::dtypeBytes(plan.loads[index].dtype));
    for (const Output &output : plan.outputs)
      if (output.full)
        widest = std::max(widest, fusec::dtypeBytes(output.dtype));
    int64_t width = std::min<int64_t>(8, 16 / widest);
    if (length % width != 0)
      width = 1;
    auto vectorizable = [&](const Shape &strides) {
      return readsVectors(strides, width, cols, {&rows});
    };
    const int64_t vectors = (length + width - 1) / width;
    const bool warpPerRow = vectors <= kWarpRowVectors;
    int64_t threads = 32;
    if (!warpPerRow) {
      // 16-bit rows (8 per access) get more threads and fewer steps each:
      // more loads in flight per row for the same bytes.
      int64_t perThread =
          width == 8 ? kVectorsPerThread / 2 : kVectorsPerThread;
      threads = 64;
      while (threads < 1024 && threads * perThread < vectors)
        threads *= 2;
    }
    const int64_t steps = (vectors + threads - 1) / threads;

    // Values a pass computes that a later pass needs again stay in
    // registers (softmax's exp(x - max) is computed once, not twice), and
    // so do loads that two passes read, when they all fit.
    std::vector<bool> cached(plan.loads.size(), false);
    auto planCaches = [&]() -> bool {
      std::vector<int> uses(plan.loads.size(), 0);
      for (const std::vector<unsigned> &used : passLoads)
        for (unsigned index : used)
          ++uses[index];
      int64_t arrays = llvm::count_if(uses, [](int n) { return n > 1; }) +
                       static_cast<int64_t>(kept.size());
      bool fits = steps > 0 && arrays * steps * width <= kMaxCachedPerThread;
      for (size_t i = 0; i < plan.loads.size(); ++i)
        cached[i] = fits && uses[i] > 1;
      return fits;
    };
    // Rows that do not fit in registers are read from memory once per pass:
    // softmax's max and sum share one pass (online softmax).
    std::optional<OnlineSoftmax> online;
    if (!planCaches()) {
      // (Not for empty rows: their sum of exp is 0, but the online state
      // cannot tell them from rows of -inf, whose sum is NaN.)
      if (steps > 0)
        online = findOnlineSoftmax(plan);
      if (online) {
        passes.erase(passes.begin() + (online->sum->level - 1));
        passRoots.erase(passRoots.begin() + (online->sum->level - 1));
      }
      planned = PassSlices::plan(plan, passRoots, /*keepValues=*/false);
      planCaches();
    }
    const std::string onlineState = "online";
    const std::string onlineType =
        online ? std::string("FusecMaxExpSum<") +
                     computeType(online->max->dtype) + ">"
               : "";
    const std::string onlineCombiner =
        online ? std::string("FusecOnlineSoftmax<") +
                     computeType(online->max->dtype) + ">"
               : "";
    auto isOnlineMax = [&](const ReductionInfo *reduction) {
      return online && reduction == online->max;
    };
    std::vector<std::string> keptNames;
    for (size_t k = 0; k < kept.size(); ++k)
      keptNames.push_back("k" + std::to_string(k));

    unsigned blockThreads =
        warpPerRow ? 32 * kRowsPerWarpBlock : static_cast<unsigned>(threads);
    launch.blockX = blockThreads;
    launch.gridX = std::max<int64_t>(
        1, warpPerRow ? (numRows + kRowsPerWarpBlock - 1) / kRowsPerWarpBlock
                      : numRows);
    launch.maxBlocksPerMultiprocessor = 0;

    os << header(plan, name, ops,
                 (warpPerRow ? std::string("a warp per row")
                             : "a block of " + std::to_string(threads) +
                                   " threads per row") +
                     ", " + std::to_string(width) + " per access, " +
                     std::to_string(steps) + " steps" +
                     (online ? ", online softmax" : ""));
    os << signature(blockThreads, false);
    os.indent();
    int warps = static_cast<int>(threads / 32);
    if (!warpPerRow) {
      for (const ReductionInfo &reduction : plan.reductions)
        if (!online || (&reduction != online->max && &reduction != online->sum))
          os << "__shared__ " << computeType(reduction.dtype) << " "
             << reduction.accumulator << "_scratch[" << warps << "];\n";
      if (online)
        os << "__shared__ " << onlineType << " " << onlineState << "_scratch["
           << warps << "];\n";
    }
    if (warpPerRow) {
      os << "const int64_t row = (int64_t)blockIdx.x * " << kRowsPerWarpBlock
         << " + (threadIdx.x >> 5);\n";
      os << "const int tid = threadIdx.x & 31;\n";
    } else {
      os << "const int64_t row = blockIdx.x;\n";
      os << "const int tid = threadIdx.x;\n";
    }
    os << "if (row >= " << numRows << ") return;\n";
    emitUniformLoads(os);
    RowScope scope = emitRowLoads(os, rows);
    // Cached loads keep the stored elements: a bf16 row takes half the
    // registers it would as f32.
    auto vectorType = [&](DType dtype) { return cudaVectorType(dtype, width); };
    for (size_t i = 0; i < plan.loads.size(); ++i) {
      if (!cached[i])
        continue;
      if (vectorizable(plan.loads[i].strides))
        os << vectorType(plan.loads[i].dtype) << " " << plan.loads[i].variable
           << "_cache[" << steps << "];\n";
      else
        os << storageType(plan.loads[i].dtype) << " " << plan.loads[i].variable
           << "_cache[" << steps * width << "];\n";
    }
    for (auto [index, entry] : llvm::enumerate(kept))
      os << computeType(dtypeOf(entry.first.getType())) << " "
         << keptNames[index] << "_cache[" << steps * width << "];\n";
    if (failed(emitReducedOps(os, scope, 0)))
      return failure();
    std::string outRow = rows.offset("row", outStrides);
    std::vector<bool> inCache(plan.loads.size(), false);
    unsigned reciprocals = 0;

    for (size_t p = 0; p < passes.size(); ++p) {
      const RowPass &pass = passes[p];
      ScalarLets statements;
      ScopePrinter printer(plan, f32Functions, "v");
      scope.bindInto(printer);
      printer.bindLoads(Load::Full);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (entry.second < p)
          printer.bind(entry.first, keptNames[index]);
      // A row's values divided by one per-row value and then rounded to
      // f16/bf16 (softmax's normalization): one division per row, a
      // multiplication per element; the rounding absorbs the f32 ulp.
      for (Operation *op : slices[p]) {
        auto div = dyn_cast<DivOp>(op);
        if (!div || !div->hasOneUse() || dtypeOf(div.getType()) != DType::F32)
          continue;
        Value divisor = div.getRhs();
        if (auto broadcast = divisor.getDefiningOp<BroadcastToOp>())
          divisor = broadcast.getOperand();
        if (plan.roles.lookup(divisor) != ValueRole::Reduced)
          continue;
        auto cast = dyn_cast<CastOp>(*div->getUsers().begin());
        DType rounded = cast ? dtypeOf(cast.getType()) : DType::F32;
        if (rounded != DType::F16 && rounded != DType::BF16)
          continue;
        std::string reciprocal = "rcp" + std::to_string(reciprocals++);
        bool found = false;
        for (const auto &[value, variable] : scope.bound)
          if (value == divisor && !found) {
            os << "const float " << reciprocal << " = 1.0f / " << variable
               << ";\n";
            found = true;
          }
        if (found)
          printer.divideByReciprocal(div.getRhs(), reciprocal);
      }
      if (failed(printer.build(slices[p], statements)))
        return failure();
      bool onlinePass = llvm::any_of(pass.reductions, isOnlineMax);
      for (const ReductionInfo *reduction : pass.reductions)
        if (isOnlineMax(reduction))
          os << onlineType << " " << onlineState << " = " << onlineCombiner
             << "::identity();\n";
        else
          os << computeType(reduction->dtype) << " " << reduction->accumulator
             << " = " << combiner(*reduction) << "::identity();\n";
      os << "#pragma unroll\n";
      os << "for (int step = 0; step < " << steps << "; ++step) {\n";
      os.indent();
      os << "const int64_t col0 = ((int64_t)step * " << threads << " + tid) * "
         << width << ";\n";
      // (Rows held in registers that the block's steps cover exactly need
      // no guard: a branch per step is a cost where 16-bit rows are bound
      // by instruction issue. Long rows keep it: without it their many
      // steps unroll too far (H200, softmax_f32_512x131072: 60.3% of copy
      // with the guard, 37.8% without).)
      if (!online && length % (threads * width) == 0)
        os << "{\n";
      else
        os << "if (col0 < " << length << ") {\n";
      os.indent();
      std::vector<bool> readsCache(plan.loads.size(), false);
      for (unsigned index : passLoads[p]) {
        const Load &load = plan.loads[index];
        readsCache[index] = inCache[index];
        if (readsCache[index] || !vectorizable(load.strides))
          continue;
        os << "const " << vectorType(load.dtype) << " " << load.variable
           << "_vector = *reinterpret_cast<const " << vectorType(load.dtype)
           << " *>(in" << load.argument << " + " << load.variable
           << "_row + col0);\n";
        if (cached[index])
          os << load.variable << "_cache[step] = " << load.variable
             << "_vector;\n";
      }
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i)
          if (plan.outputs[i].full && vectorizable(outStrides))
            os << vectorType(plan.outputs[i].dtype) << " out" << i
               << "_vector;\n";
      if (onlinePass)
        os << computeType(online->max->dtype) << " " << onlineState
           << "_values[" << width << "];\n";
      os << "#pragma unroll\n";
      os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
      os.indent();
      os << "[[maybe_unused]] const int64_t col = col0 + lane;\n";
      for (unsigned index : passLoads[p]) {
        const Load &load = plan.loads[index];
        bool vector = vectorizable(load.strides);
        std::string cacheSlot = vector ? load.variable + "_cache[step].v[lane]"
                                       : load.variable + "_cache[step * " +
                                             std::to_string(width) + " + lane]";
        std::string element = readsCache[index] ? cacheSlot
                              : vector
                                  ? load.variable + "_vector.v[lane]"
                                  : "in" + std::to_string(load.argument) + "[" +
                                        load.variable + "_row + " +
                                        cols.offset("col", load.strides) + "]";
        if (cached[index] && !readsCache[index] && !vector)
          os << cacheSlot << " = " << element << ";\n";
        os << "const " << computeType(load.dtype) << " " << load.variable
           << " = " << fromStorage(load.dtype, element) << ";\n";
      }
      for (auto [index, entry] : llvm::enumerate(kept))
        if (keptUses[p].contains(entry.first))
          os << "const " << computeType(dtypeOf(entry.first.getType())) << " "
             << keptNames[index] << " = " << keptNames[index]
             << "_cache[step * " << width << " + lane];\n";
      printer.print(os, statements);
      for (auto [index, entry] : llvm::enumerate(kept))
        if (entry.second == p)
          os << keptNames[index] << "_cache[step * " << width
             << " + lane] = " << printer.variableOf(entry.first) << ";\n";
      for (const ReductionInfo *reduction : pass.reductions)
        if (isOnlineMax(reduction))
          os << onlineState << "_values[lane] = "
             << printer.variableOf(reduction->op->getOperand(0)) << ";\n";
        else
          os << reduction->accumulator << " = " << combiner(*reduction)
             << "::combine(" << reduction->accumulator << ", "
             << printer.variableOf(reduction->op->getOperand(0)) << ");\n";
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i) {
          if (!plan.outputs[i].full)
            continue;
          std::string value = storedValue(printer, plan.outputs[i].value,
                                          plan.outputs[i].dtype);
          if (vectorizable(outStrides))
            os << "out" << i << "_vector.v[lane] = " << value << ";\n";
          else
            os << "out" << i << "[" << outRow << " + "
               << cols.offset("col", outStrides) << "] = " << value << ";\n";
        }
      os.unindent();
      os << "}\n";
      if (onlinePass)
        os << onlineState << " = " << onlineCombiner << "::add(" << onlineState
           << ", " << onlineState << "_values);\n";
      if (pass.storesOutputs)
        for (size_t i = 0; i < plan.outputs.size(); ++i)
          if (plan.outputs[i].full && vectorizable(outStrides))
            os << "*reinterpret_cast<" << vectorType(plan.outputs[i].dtype)
               << " *>(out" << i << " + " << outRow << " + col0) = out" << i
               << "_vector;\n";
      os.unindent();
      os << "}\n";
      os.unindent();
      os << "}\n";
      for (unsigned index : passLoads[p])
        inCache[index] = inCache[index] || cached[index];
      auto allReduce = [&](const std::string &state,
                           const std::string &combinerType) {
        if (warpPerRow)
          os << state << " = fusec_warp_allreduce<" << combinerType << ">("
             << state << ");\n";
        else
          os << state << " = fusec_block_allreduce<" << combinerType << ", "
             << warps << ">(" << state << ", " << state << "_scratch);\n";
      };
      for (const ReductionInfo *reduction : pass.reductions) {
        if (isOnlineMax(reduction)) {
          allReduce(onlineState, onlineCombiner);
          const char *type = computeType(reduction->dtype);
          os << "const " << type << " " << online->max->accumulator << " = "
             << onlineState << ".max;\n";
          os << "const " << type << " " << online->sum->accumulator << " = "
             << onlineCombiner << "::sum(" << onlineState << ");\n";
          scope.bound.push_back(
              {online->sum->op->getResult(0), online->sum->accumulator});
        } else {
          allReduce(reduction->accumulator, combiner(*reduction));
        }
        scope.bound.push_back(
            {reduction->op->getResult(0), reduction->accumulator});
      }
      if (!pass.reductions.empty()) {
        unsigned level = pass.reductions.front()->level;
        if (failed(emitReducedOps(os, scope, level)))
          return failure();
        // The sum's level was computed in this pass too.
        if (onlinePass && failed(emitReducedOps(os, scope, level + 1)))
          return failure();
      }
    }
    os << "if (tid == 0) {\n";
    os.indent();
    emitReducedOutputs(os, scope, "row");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }

  LogicalResult emitColumns(raw_indented_ostream &os,
                            fusec::LaunchGeometry &launch,
                            int64_t &scratchBytes) {
    DimGroup outer, reduced, inner;
    columnGroups(plan.space, outer, reduced, inner);
    const int64_t innerSize = inner.size(), reducedSize = reduced.size();
    Shape outStrides = outputStrides(plan);

    std::vector<Value> roots = plan.reductionOperands(1);
    std::vector<Value> fullOutputs = plan.fullOutputs();
    roots.insert(roots.end(), fullOutputs.begin(), fullOutputs.end());
    SmallVector<Operation *> slice = plan.fullSlice(roots);
    std::vector<unsigned> used = plan.loadsOf(slice, roots);

    // Each thread owns `width` adjacent inner columns: 16-byte loads where
    // every row of them starts aligned.
    size_t widest = 1;
    for (unsigned index : used)
      widest = std::max(widest, fusec::dtypeBytes(plan.loads[index].dtype));
    int64_t width = std::min<int64_t>(4, 16 / widest);
    if (innerSize % width != 0)
      width = 1;
    auto vectorizable = [&](const Shape &strides) {
      return readsVectors(strides, width, inner, {&outer, &reduced});
    };
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
    std::vector<int64_t> partialOffsets;
    int64_t counterOffset = 0;
    if (splits > 1) {
      for (size_t r = 0; r < plan.reductions.size(); ++r) {
        partialOffsets.push_back(scratchBytes);
        scratchBytes += (splits * lanes * 8 + 15) / 16 * 16;
      }
      counterOffset = scratchBytes;
      scratchBytes += tiles * 4;
    }
    launch.blockX = kColumnTile;
    launch.blockY = kColumnRows;
    launch.gridX = std::max<int64_t>(1, tiles);
    launch.gridY = static_cast<unsigned>(splits);
    launch.maxBlocksPerMultiprocessor = 0;

    os << header(plan, name, ops,
                 "threads along " + std::to_string(innerSize) +
                     " inner columns (" + std::to_string(width) + " each), " +
                     std::to_string(reducedSize) + " reduced rows in " +
                     std::to_string(splits) + " splits");
    os << signature(kColumnTile * kColumnRows, splits > 1);
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << "__shared__ " << computeType(reduction.dtype) << " "
         << reduction.accumulator << "_part[" << kColumnRows << "]["
         << tileColumns + 1 << "];\n";
    os << "const int64_t tile = blockIdx.x;\n";
    os << "const int64_t o = tile / " << innerTiles << ";\n";
    os << "const int64_t i0 = tile % " << innerTiles << " * " << tileColumns
       << " + threadIdx.x * " << width << ";\n";
    os << "const bool valid = tile < " << tiles << " && i0 < " << innerSize
       << ";\n";
    os << "const int64_t kBegin = (int64_t)blockIdx.y * " << rowsPerSplit
       << ";\n";
    // Splits of whole rows per thread loop a constant count, unrolled so
    // that several loads are in flight per thread: a column sum reads each
    // element once and is bound by how many bytes wait in the memory system.
    const bool wholeSplits = reducedSize % rowsPerSplit == 0 &&
                             rowsPerSplit % (kColumnRows * kColumnUnroll) == 0;
    if (!wholeSplits)
      os << "const int64_t kEnd = kBegin + " << rowsPerSplit << " < "
         << reducedSize << " ? kBegin + " << rowsPerSplit << " : "
         << reducedSize << ";\n";
    emitUniformLoads(os);
    auto offsetOf = [&](const Shape &strides, bool alongReduced,
                        const std::string &column) {
      std::string offset =
          outer.offset("o", strides) + " + " + inner.offset(column, strides);
      if (alongReduced)
        offset += " + " + reduced.offset("k", strides);
      return offset;
    };
    auto emitReducedLoads = [&] {
      for (const Load &load : plan.loads)
        if (load.kind == Load::Reduced)
          os << "const " << computeType(load.dtype) << " " << load.variable
             << " = "
             << loadExpression(load, offsetOf(load.strides, false, "i"))
             << ";\n";
    };
    RowScope scope;
    for (auto [value, index] : plan.loadOf)
      if (plan.loads[index].kind != Load::Full)
        scope.bound.push_back({value, plan.loads[index].variable});
    ScalarLets statements;
    ScopePrinter printer(plan, f32Functions, "v");
    scope.bindInto(printer);
    printer.bindLoads(Load::Full);
    if (failed(printer.build(slice, statements)))
      return failure();

    for (const ReductionInfo &reduction : plan.reductions) {
      os << computeType(reduction.dtype) << " " << reduction.accumulator << "["
         << width << "];\n";
      os << "for (int lane = 0; lane < " << width << "; ++lane) "
         << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::identity();\n";
    }
    os << "if (valid) {\n";
    os.indent();
    if (wholeSplits) {
      os << "#pragma unroll " << kColumnUnroll << "\n";
      os << "for (int step = 0; step < " << rowsPerSplit / kColumnRows
         << "; ++step) {\n";
      os.indent();
      os << "const int64_t k = kBegin + threadIdx.y + step * " << kColumnRows
         << ";\n";
    } else {
      os << "for (int64_t k = kBegin + threadIdx.y; k < kEnd; k += "
         << kColumnRows << ") {\n";
      os.indent();
    }
    for (unsigned index : used) {
      const Load &load = plan.loads[index];
      if (!vectorizable(load.strides))
        continue;
      std::string vectorType = cudaVectorType(load.dtype, width);
      os << "const " << vectorType << " " << load.variable
         << "_vector = *reinterpret_cast<const " << vectorType << " *>(in"
         << load.argument << " + " << offsetOf(load.strides, true, "i0")
         << ");\n";
    }
    os << "#pragma unroll\n";
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    os << "[[maybe_unused]] const int64_t i = i0 + lane;\n";
    emitReducedLoads();
    for (unsigned index : used) {
      const Load &load = plan.loads[index];
      os << "const " << computeType(load.dtype) << " " << load.variable << " = "
         << (vectorizable(load.strides)
                 ? fromStorage(load.dtype, load.variable + "_vector.v[lane]")
                 : loadExpression(load, offsetOf(load.strides, true, "i")))
         << ";\n";
    }
    emitColumnStep(os, statements, printer, offsetOf(outStrides, true, "i"),
                   "lane");
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    // Combine the rows of the block.
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "_part[threadIdx.y][threadIdx.x * "
         << width << " + lane] = " << reduction.accumulator << "[lane];\n";
    os.unindent();
    os << "}\n";
    os << "__syncthreads();\n";
    os << "if (threadIdx.y == 0) {\n";
    os.indent();
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    os << "for (int r = 1; r < " << kColumnRows << "; ++r) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::combine(" << reduction.accumulator << "[lane], "
         << reduction.accumulator << "_part[r][threadIdx.x * " << width
         << " + lane]);\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    auto emitEpilogue = [&]() -> LogicalResult {
      os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
      os.indent();
      os << "const int64_t i = i0 + lane;\n";
      emitReducedLoads();
      RowScope epilogue = scope;
      for (const ReductionInfo &reduction : plan.reductions)
        epilogue.bound.push_back(
            {reduction.op->getResult(0), reduction.accumulator + "[lane]"});
      if (failed(emitReducedOps(os, epilogue, 0)) ||
          failed(emitReducedOps(os, epilogue, 1)))
        return failure();
      emitReducedOutputs(os, epilogue,
                         "o * " + std::to_string(innerSize) + " + i");
      os.unindent();
      os << "}\n";
      return success();
    };
    if (splits == 1) {
      os << "if (threadIdx.y == 0 && valid) {\n";
      os.indent();
      if (failed(emitEpilogue()))
        return failure();
      os.unindent();
      os << "}\n";
      os.unindent();
      os << "}\n";
      return success();
    }
    // Partials of every split; the block that finishes a tile last
    // combines them in split order and runs the epilogue.
    os << "__shared__ bool fusec_last;\n";
    for (size_t r = 0; r < plan.reductions.size(); ++r) {
      const ReductionInfo &reduction = plan.reductions[r];
      os << computeType(reduction.dtype) << " *" << reduction.accumulator
         << "_partials = reinterpret_cast<" << computeType(reduction.dtype)
         << " *>(fusec_scratch + " << partialOffsets[r] << ");\n";
    }
    os << "const int64_t column = tile * " << tileColumns << " + threadIdx.x * "
       << width << ";\n";
    os << "if (threadIdx.y == 0 && valid) {\n";
    os.indent();
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions)
      os << reduction.accumulator << "_partials[(int64_t)blockIdx.y * " << lanes
         << " + column + lane] = " << reduction.accumulator << "[lane];\n";
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    os << "__threadfence();\n";
    os << "__syncthreads();\n";
    os << "if (threadIdx.x == 0 && threadIdx.y == 0) {\n";
    os.indent();
    os << "unsigned *counters = reinterpret_cast<unsigned *>(fusec_scratch + "
       << counterOffset << ");\n";
    os << "const unsigned done = atomicAdd(&counters[tile], 1u);\n";
    os << "fusec_last = done == " << splits - 1 << "u;\n";
    os << "if (fusec_last) counters[tile] = 0u; // ready for the next run\n";
    os.unindent();
    os << "}\n";
    os << "__syncthreads();\n";
    os << "if (fusec_last && threadIdx.y == 0 && valid) {\n";
    os.indent();
    os << "__threadfence();\n";
    os << "for (int lane = 0; lane < " << width << "; ++lane) {\n";
    os.indent();
    for (const ReductionInfo &reduction : plan.reductions) {
      os << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::identity();\n";
      os << "for (int64_t s = 0; s < " << splits << "; ++s) "
         << reduction.accumulator << "[lane] = " << combiner(reduction)
         << "::combine(" << reduction.accumulator << "[lane], __ldcg(&"
         << reduction.accumulator << "_partials[s * " << lanes
         << " + column + lane]));\n";
    }
    os.unindent();
    os << "}\n";
    if (failed(emitEpilogue()))
      return failure();
    os.unindent();
    os << "}\n";
    os.unindent();
    os << "}\n";
    return success();
  }
};

} // namespace

FailureOr<fusec::KernelDesc>
buildReductionKernel(FusionOp fusion, unsigned index, fusec::Target target,
                     const MathFunctionMap *f32Functions) {
  FailureOr<ReductionPlan> plan = ReductionPlan::analyze(fusion);
  if (failed(plan))
    return failure();
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
  if (target == fusec::Target::Cpu) {
    FailureOr<std::string> source =
        CppEmitter(*plan, desc.name, desc.ops).emit();
    if (failed(source))
      return failure();
    desc.source = std::move(*source);
    return desc;
  }
  FailureOr<std::string> source =
      CudaEmitter(*plan, desc.name, desc.ops, f32Functions)
          .emit(desc.launch, desc.scratchBytes);
  if (failed(source))
    return failure();
  desc.source = std::move(*source);
  return desc;
}

} // namespace fuse
