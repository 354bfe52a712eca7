//===- FormFusionRegions.cpp - Fusion-region formation around roots ------===//
//
// Phase 1 decides: a union-find over the function's ops, grown in program
// order. Each op reports its FusionKind; reductions root groups of their
// own iteration space, layout ops get a group alone, and elementwise ops,
// broadcasts and views join the groups of their producers when the
// per-kind rules allow it and no cycle forms; a broadcast that cannot join
// a consumer where it is gets a copy in the consumer's group. Phase 2
// materializes each group as a fuse.fusion.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/ReductionSpace.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

#include <optional>

namespace fuse {
#define GEN_PASS_DEF_FUSEFORMFUSIONREGIONS
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

bool isSplatConstant(Operation *op) {
  auto constant = dyn_cast_or_null<ConstantOp>(op);
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Whether two values have the same number of elements, a dynamic
/// (symbolic) dim counting as equal to another's: SymbolicDims holds them
/// to the same symbol where they meet.
bool sameElementCount(Value a, Value b) {
  auto count = [](Value value) {
    ArrayRef<int64_t> shape = cast<ShapedType>(value.getType()).getShape();
    int64_t dynamic = 0, elements = 1;
    for (int64_t dim : shape) {
      if (ShapedType::isDynamic(dim))
        ++dynamic;
      else
        elements *= dim;
    }
    return std::make_pair(dynamic, elements);
  };
  return count(a) == count(b);
}

/// "8 to 32 elements", or with symbolic dims the two types.
std::string elementsText(Value from, Value to) {
  auto fromType = cast<ShapedType>(from.getType());
  auto toType = cast<ShapedType>(to.getType());
  if (fromType.hasStaticShape() && toType.hasStaticShape())
    return std::to_string(fromType.getNumElements()) + " to " +
           std::to_string(toType.getNumElements()) + " elements";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << fromType << " to " << toType;
  return text;
}

std::optional<FusionKind> kindOf(Operation *op) {
  if (auto kind = dyn_cast<FusionKindOpInterface>(op))
    return kind.getFusionKind();
  return std::nullopt;
}

enum class GroupKind { Pointwise, Reduction, Layout };

/// A reduction kernel makes one pass over its rows per dependent reduction
/// (softmax two, layer norm two): past this many reductions, a chain of
/// them starts a new kernel rather than growing one without bound.
constexpr unsigned kMaxReductionsPerKernel = 8;

/// One future region.
struct Group {
  GroupKind kind = GroupKind::Pointwise;
  /// Pointwise groups: the shape every member computes (members of equal
  /// element count but another shape join through views).
  SmallVector<int64_t> shape;
  bool hasViews = false;
  /// Reduction groups: the space every reduction shares, and how many
  /// reductions the group holds.
  ReductionSpace space;
  unsigned numReductions = 0;
  SmallVector<Operation *> members;
  /// Users of members that were outside the group when recorded (entries
  /// that joined later are skipped and dropped at the next merge).
  SmallVector<Operation *> escapes;
};

/// Groups of ops: a union-find with path compression and union by size,
/// whose leaders own their group's members, kind and outside users.
class FusionGroups {
public:
  explicit FusionGroups(Block &block) {
    for (Operation &op : block)
      track(&op, 2 * ops.size());
  }

  /// Program order: the block's ops at even positions, each copy
  /// (addCopyBefore) at the odd one just before the op it was made for.
  unsigned position(Operation *op) const {
    return positionOf[indexOf.lookup(op)];
  }

  /// Tracks `copy`, an op inserted right before `user`, at a position
  /// between `user` and the ops before it.
  void addCopyBefore(Operation *copy, Operation *user) {
    track(copy, position(user) - 1);
  }

  /// Program order, ties (copies made for one user) broken by creation.
  bool precedes(Operation *a, Operation *b) const {
    unsigned ia = indexOf.lookup(a), ib = indexOf.lookup(b);
    return std::make_pair(positionOf[ia], ia) <
           std::make_pair(positionOf[ib], ib);
  }

  /// Forgets `count` of the outside uses by `user` recorded for the group
  /// led by `leader` (uses moved to a copy).
  void dropEscapes(int leader, Operation *user, unsigned count) {
    SmallVector<Operation *> &escapes = group(leader).escapes;
    for (auto it = escapes.begin(); count > 0 && it != escapes.end();)
      if (*it == user) {
        it = escapes.erase(it);
        --count;
      } else {
        ++it;
      }
  }

  Group &add(Operation *op, GroupKind kind) {
    unsigned index = indexOf.lookup(op);
    groupOfLeader[index] = groups.size();
    groups.emplace_back();
    Group &group = groups.back();
    group.kind = kind;
    group.members.push_back(op);
    for (Operation *user : op->getUsers())
      group.escapes.push_back(user);
    return group;
  }

  /// The leader of the op's group, or -1 when it is in none.
  int leaderOf(Operation *op) {
    if (!op)
      return -1;
    auto it = indexOf.find(op);
    if (it == indexOf.end())
      return -1;
    unsigned root = find(it->second);
    return groupOfLeader[root] >= 0 ? static_cast<int>(root) : -1;
  }
  Group &group(int leader) { return groups[groupOfLeader[leader]]; }

  /// Merges two groups into one described by `combined` (its kind and
  /// space, set by the caller); the larger group's leader stays leader and
  /// is returned.
  int merge(int a, int b, Group &&combined) {
    int keep = group(a).members.size() >= group(b).members.size() ? a : b;
    int drop = keep == a ? b : a;
    Group &kept = group(keep), &dropped = group(drop);
    combined.members = std::move(kept.members);
    combined.members.append(dropped.members.begin(), dropped.members.end());
    combined.escapes = std::move(kept.escapes);
    combined.escapes.append(dropped.escapes.begin(), dropped.escapes.end());
    parent[drop] = keep;
    groupOfLeader[drop] = -1;
    kept = std::move(combined);
    dropped.members.clear();
    dropped.escapes.clear();
    // Drop the outside users that are now inside.
    llvm::erase_if(kept.escapes,
                   [&](Operation *user) { return leaderOf(user) == keep; });
    return keep;
  }

  /// Leaders of all groups, ordered by their last member's position.
  SmallVector<int> leaders() {
    SmallVector<int> result;
    for (size_t i = 0; i < ops.size(); ++i)
      if (find(i) == i && groupOfLeader[i] >= 0)
        result.push_back(i);
    auto last = [&](int leader) {
      unsigned latest = 0;
      for (Operation *member : group(leader).members)
        latest = std::max(latest, position(member));
      return latest;
    };
    SmallVector<std::pair<unsigned, int>> keyed;
    for (int leader : result)
      keyed.push_back({last(leader), leader});
    llvm::sort(keyed);
    result.clear();
    for (auto [key, leader] : keyed)
      result.push_back(leader);
    return result;
  }

  /// If merging `producer`'s group into `consumer`'s would make a cycle,
  /// the first op outside both on the offending path; nullptr when legal.
  /// Only paths producer -> outside -> consumer matter (the edge producer
  /// -> consumer exists). Ops come in program order and `consumer` holds
  /// the latest, so the search never looks past `limit`.
  Operation *cycleThrough(int producer, int consumer, unsigned limit) {
    SmallVector<std::pair<Operation *, Operation *>> worklist; // op, exit
    llvm::DenseSet<int> visitedGroups;
    llvm::SmallPtrSet<Operation *, 16> visitedOps;
    auto push = [&](Operation *user, Operation *exit) -> Operation * {
      if (position(user) > limit)
        return nullptr;
      int leader = leaderOf(user);
      if (leader == consumer)
        return exit; // back into the merged groups: a cycle
      if (leader == producer)
        return nullptr;
      if (leader >= 0 ? visitedGroups.insert(leader).second
                      : visitedOps.insert(user).second)
        worklist.push_back({user, exit ? exit : user});
      return nullptr;
    };
    for (Operation *user : group(producer).escapes)
      if (leaderOf(user) != consumer && leaderOf(user) != producer)
        push(user, nullptr);
    while (!worklist.empty()) {
      auto [op, exit] = worklist.pop_back_val();
      int leader = leaderOf(op);
      if (leader >= 0) {
        for (Operation *user : group(leader).escapes)
          if (Operation *cycle = push(user, exit))
            return cycle;
      } else {
        for (Operation *user : op->getUsers())
          if (Operation *cycle = push(user, exit))
            return cycle;
      }
    }
    return nullptr;
  }

private:
  void track(Operation *op, unsigned position) {
    indexOf[op] = ops.size();
    ops.push_back(op);
    positionOf.push_back(position);
    parent.push_back(parent.size());
    groupOfLeader.push_back(-1);
  }

  unsigned find(unsigned i) {
    while (parent[i] != i) {
      parent[i] = parent[parent[i]]; // path halving
      i = parent[i];
    }
    return i;
  }

  SmallVector<Operation *> ops;
  DenseMap<Operation *, unsigned> indexOf;
  std::vector<unsigned> positionOf;
  std::vector<unsigned> parent;
  std::vector<int> groupOfLeader; ///< index into `groups`, -1 if none
  std::vector<Group> groups;
};

std::string formatShape(ArrayRef<int64_t> shape) {
  return fusec::formatShape(fusec::Shape(shape.begin(), shape.end()));
}

struct FormFusionRegions
    : public fuse::impl::FuseFormFusionRegionsBase<FormFusionRegions> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // (A pass instance may run on several functions: nothing carries over.)
    inlinedSizes.clear();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("fusion expects a function with a single block");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    FusionGroups groups(block);
    if (failed(decide(block, groups)))
      return signalPassFailure();
    for (int leader : groups.leaders()) {
      SmallVector<Operation *> members = groups.group(leader).members;
      llvm::sort(members, [&](Operation *a, Operation *b) {
        return groups.precedes(a, b);
      });
      // A contraction's kernel (the int8 GEMV) reads every operand from a
      // buffer, uniform scales too; the other kernels read splat constants
      // inline, and pointwise and reduction kernels symbolic sizes.
      bool contraction = kindOf(members.front()) == FusionKind::Contraction;
      materialize(members, /*inlineSplats=*/!contraction,
                  /*inlineSizes=*/groups.group(leader).kind !=
                      GroupKind::Layout);
    }
    // A size some other op still reads (a layout region's input) is a
    // region of its own after all.
    for (Operation *size : inlinedSizes) {
      if (size->use_empty())
        size->erase();
      else
        materialize({size}, /*inlineSplats=*/true, /*inlineSizes=*/false);
    }
    // Splat constants now live inside the (non-contraction) regions that
    // use them.
    for (Operation &op : llvm::make_early_inc_range(block))
      if (isa<ConstantOp>(op) && op.use_empty())
        op.erase();
    // A region sits where its last member was; users of its results that
    // came earlier move below it. Legal because groups never form cycles.
    if (!sortTopologically(&block)) {
      func.emitError("internal error: fusion regions formed a cycle");
      return signalPassFailure();
    }
  }

  LogicalResult decide(Block &block, FusionGroups &groups) {
    for (Operation &op : block.without_terminator()) {
      // A symbolic size is one of the sizes a kernel takes: cloned into
      // the regions of the elementwise ops and reductions reading it (as a
      // splat constant is) rather than a one-element kernel of its own
      // (which it still gets where another op reads it: runOnOperation).
      if (isa<DimSizeOp>(&op) &&
          llvm::any_of(op.getUsers(), [](Operation *user) {
            std::optional<FusionKind> kind = kindOf(user);
            return kind && (*kind == FusionKind::Elementwise ||
                            *kind == FusionKind::Broadcast ||
                            *kind == FusionKind::Reduction);
          })) {
        inlinedSizes.push_back(&op);
        continue;
      }
      if (isa<ConstantOp>(&op)) {
        if (!isSplatConstant(&op))
          op.emitRemark() << "not fused: " << describeOp(&op)
                          << " is a dense constant; kernels read it as an "
                             "input buffer";
        continue;
      }
      std::optional<FusionKind> kind = kindOf(&op);
      if (!kind) {
        op.emitRemark() << "not fused: " << describeOp(&op)
                        << " is not an op of the fuse dialect";
        continue;
      }
      switch (*kind) {
      case FusionKind::Composite:
        return op.emitError()
               << describeOp(&op)
               << " must be decomposed (fuse-decompose-composites) before "
                  "fusion";
      case FusionKind::Library:
        // fuse-prepare-library-calls already said what the call took.
        continue;
      case FusionKind::Contraction:
        groups.add(&op, GroupKind::Layout);
        if (!noFuse)
          op.emitRemark() << "not fused: " << describeOp(&op)
                          << " contracts its operands in a kernel of its own";
        continue;
      case FusionKind::Layout:
        groups.add(&op, GroupKind::Layout);
        if (!noFuse)
          op.emitRemark() << "not fused: " << describeOp(&op)
                          << " moves elements; it runs as a kernel of its "
                             "own";
        continue;
      case FusionKind::View:
        if (noFuse || !joinProducer(&op, groups))
          op.emitRemark() << "not fused: " << describeOp(&op)
                          << " only changes the shape; it runs as a buffer "
                             "alias between kernels";
        continue;
      case FusionKind::Reduction: {
        Group &group = groups.add(&op, GroupKind::Reduction);
        group.space = ReductionSpace::of(cast<ReductionOpInterface>(&op));
        group.numReductions = 1;
        break;
      }
      case FusionKind::Elementwise:
      case FusionKind::Broadcast: {
        Group &group = groups.add(&op, GroupKind::Pointwise);
        auto shape = shapeOf(op.getResult(0));
        group.shape.assign(shape.begin(), shape.end());
        break;
      }
      }
      if (noFuse)
        continue;
      for (Value operand : op.getOperands())
        fuseProducer(operand, &op, groups);
    }
    return success();
  }

  /// A view joins its producer's pointwise group: the group iterates
  /// linear indices, which a view does not change.
  bool joinProducer(Operation *view, FusionGroups &groups) {
    int producer = groups.leaderOf(view->getOperand(0).getDefiningOp());
    if (producer < 0 || groups.group(producer).kind != GroupKind::Pointwise)
      return false;
    groups.add(view, GroupKind::Pointwise);
    int self = groups.leaderOf(view);
    Group combined;
    combined.kind = GroupKind::Pointwise;
    combined.shape = groups.group(producer).shape;
    combined.hasViews = true;
    groups.merge(producer, self, std::move(combined));
    return true;
  }

  /// Gives a "not fused with its consumer" remark its structured form, for
  /// tools that draw the graph (fusec --emit=dot): metadata holding the
  /// consumer's location and the reason. Metadata is not printed.
  static void attachEdge(InFlightDiagnostic &remark, Operation *consumer,
                         StringRef reason) {
    if (Diagnostic *diagnostic = remark.getUnderlyingDiagnostic()) {
      diagnostic->getMetadata().push_back(
          DiagnosticArgument(Attribute(consumer->getLoc())));
      diagnostic->getMetadata().push_back(DiagnosticArgument(
          Attribute(StringAttr::get(consumer->getContext(), reason))));
    }
  }

  /// Merges the group producing `operand` into `op`'s, copies a broadcast
  /// into it (fuseCopyOfBroadcast), or remarks why neither happened.
  void fuseProducer(Value operand, Operation *op, FusionGroups &groups) {
    Operation *producer = operand.getDefiningOp();
    int producerGroup = groups.leaderOf(producer);
    int consumerGroup = groups.leaderOf(op);
    if (producerGroup < 0 || producerGroup == consumerGroup)
      return;
    Group combined;
    std::optional<std::string> reason =
        whyNotFused(operand, op, groups.group(producerGroup),
                    groups.group(consumerGroup), combined);
    if (!reason) {
      if (Operation *exit = groups.cycleThrough(producerGroup, consumerGroup,
                                                groups.position(op)))
        reason = "the path through " + describeOp(exit) +
                 " outside the region would form a cycle";
    }
    if (!reason) {
      groups.merge(producerGroup, consumerGroup, std::move(combined));
      return;
    }
    if (fuseCopyOfBroadcast(operand, op, groups)) {
      producer->emitRemark()
          << "copied into the region of its consumer " << describeOp(op)
          << ", as it cannot join it where it is: " << *reason;
      return;
    }
    InFlightDiagnostic remark = producer->emitRemark()
                                << "not fused with its consumer "
                                << describeOp(op) << ": " << *reason;
    attachEdge(remark, op, *reason);
  }

  /// A broadcast that cannot join `op`'s group where it is (CSE shares one
  /// broadcast of a LayerNorm weight across layers, or of a causal mask
  /// across attention blocks) gets a copy of its own there: a broadcast
  /// only re-reads its operand, so `op`'s kernel reads the small operand
  /// instead of another kernel writing the full tensor out for it.
  bool fuseCopyOfBroadcast(Value operand, Operation *op, FusionGroups &groups) {
    auto broadcast = operand.getDefiningOp<BroadcastToOp>();
    if (!broadcast)
      return false;
    int consumerGroup = groups.leaderOf(op);
    Group alone;
    alone.kind = GroupKind::Pointwise;
    alone.shape.assign(shapeOf(operand).begin(), shapeOf(operand).end());
    alone.members.push_back(broadcast);
    Group combined;
    if (whyNotFused(operand, op, alone, groups.group(consumerGroup), combined))
      return false;
    OpBuilder builder(op);
    Operation *copy = builder.clone(*broadcast);
    unsigned uses = llvm::count(op->getOperands(), operand);
    op->replaceUsesOfWith(operand, copy->getResult(0));
    // The outside-user lists follow the uses: `op` no longer reads the
    // broadcast's group, the copy reads its operand's producer's.
    groups.dropEscapes(groups.leaderOf(broadcast), op, uses);
    if (int source = groups.leaderOf(broadcast.getOperand().getDefiningOp());
        source >= 0)
      groups.group(source).escapes.push_back(copy);
    groups.addCopyBefore(copy, op);
    groups.add(copy, GroupKind::Pointwise);
    // Its only user is `op`, so no path leaves and re-enters: no cycle.
    groups.merge(groups.leaderOf(copy), consumerGroup, std::move(combined));
    return true;
  }

  /// The reason `operand` (made in group `producer`) cannot join its
  /// consumer `op` (in group `consumer`), or nullopt with `combined` set to
  /// the merged group's kind and space.
  std::optional<std::string> whyNotFused(Value operand, Operation *op,
                                         const Group &producer,
                                         const Group &consumer,
                                         Group &combined) {
    if (producer.kind == GroupKind::Layout ||
        consumer.kind == GroupKind::Layout)
      return std::string("layout ops run as kernels of their own");
    bool isBroadcast = kindOf(op) == FusionKind::Broadcast;
    if (producer.kind == GroupKind::Pointwise &&
        !sameElementCount(operand, op->getResult(0)) &&
        !isa<ReductionOpInterface>(op))
      return "its result is broadcast from " +
             elementsText(operand, op->getResult(0)) +
             ", and recomputing it per element would duplicate work";

    if (producer.kind == GroupKind::Pointwise &&
        consumer.kind == GroupKind::Pointwise) {
      combined.kind = GroupKind::Pointwise;
      combined.shape = consumer.shape;
      combined.hasViews = producer.hasViews || consumer.hasViews;
      return std::nullopt;
    }

    // At least one side is rooted at reductions.
    bool bothReduce = producer.kind == GroupKind::Reduction &&
                      consumer.kind == GroupKind::Reduction;
    const ReductionSpace &space =
        producer.kind == GroupKind::Reduction ? producer.space : consumer.space;
    if (bothReduce && producer.space != consumer.space)
      return "it reduces " + consumer.space.describe() + " but its producer " +
             producer.space.describe() + "; one kernel walks one space";
    unsigned numReductions = producer.numReductions + consumer.numReductions;
    if (numReductions > kMaxReductionsPerKernel)
      return "the kernel would hold " + std::to_string(numReductions) +
             " reductions, more than the " +
             std::to_string(kMaxReductionsPerKernel) +
             " passes over its rows one kernel makes";
    for (const Group *side : {&producer, &consumer}) {
      if (side->kind != GroupKind::Pointwise)
        continue;
      if (side->hasViews)
        return std::string("a reshape inside the pointwise part would "
                           "change the reduction's index space");
      if (space.roleOf(side->shape) == ValueRole::Unrelated)
        return "its shape " + formatShape(side->shape) +
               " is neither the reduction's space " + space.describe() +
               " nor its reduced shape";
    }
    bool fromReduction = producer.kind == GroupKind::Reduction;
    ValueRole operandRole = space.roleOf(shapeOf(operand));
    ValueRole resultRole = space.roleOf(shapeOf(op->getResult(0)));
    if (fromReduction && operandRole == ValueRole::Reduced &&
        resultRole == ValueRole::Full) {
      // reduce -> broadcast back: the row schedule keeps the reduced value
      // in registers; the column schedule has it only at the very end.
      if (space.schedule() == ReductionSchedule::Column)
        return "it reduces " + space.describe() +
               " as columns, whose results exist only after the whole "
               "column is read; only ops on the reduced shape follow it";
      if (!isBroadcast ||
          shapeOf(operand) != ArrayRef<int64_t>(space.keptShape()))
        return std::string("the reduced value reaches the full space only "
                           "through a broadcast of its kept-dims shape");
    }
    if (fromReduction && space.schedule() == ReductionSchedule::Column &&
        resultRole == ValueRole::Full && operandRole == ValueRole::Full &&
        !isa<ReductionOpInterface>(op))
      return "it reduces " + space.describe() +
             " as columns; values on the full space only feed the "
             "reductions";
    if (space.schedule() == ReductionSchedule::Column &&
        (broadcastsFrom(producer, consumer, space) ||
         broadcastsFrom(consumer, producer, space)))
      return "it reduces " + space.describe() +
             " as columns, whose results exist only after the whole column "
             "is read; merging would broadcast one back over the columns";
    combined.kind = GroupKind::Reduction;
    combined.space = space;
    combined.numReductions = numReductions;
    return std::nullopt;
  }

  /// Whether a member of `group` broadcasts a reduced value made in
  /// `other` back to the full space: legal only for row schedules.
  static bool broadcastsFrom(const Group &group, const Group &other,
                             const ReductionSpace &space) {
    if (other.kind != GroupKind::Reduction)
      return false;
    llvm::SmallPtrSet<Operation *, 16> made(other.members.begin(),
                                            other.members.end());
    for (Operation *member : group.members) {
      auto broadcast = dyn_cast<BroadcastToOp>(member);
      if (broadcast && made.contains(broadcast.getOperand().getDefiningOp()) &&
          space.roleOf(shapeOf(broadcast.getOperand())) == ValueRole::Reduced)
        return true;
    }
    return false;
  }

  /// Symbolic sizes (fuse.dim_size) cloned into the regions reading them.
  SmallVector<Operation *> inlinedSizes;

  void materialize(ArrayRef<Operation *> members, bool inlineSplats,
                   bool inlineSizes) {
    llvm::SmallPtrSet<Operation *, 16> inGroup(members.begin(), members.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Operation *> clonedConstants;
    for (Operation *member : members)
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (inGroup.contains(producer))
          continue;
        if ((inlineSplats && isSplatConstant(producer)) ||
            (inlineSizes && llvm::is_contained(inlinedSizes, producer))) {
          if (!llvm::is_contained(clonedConstants, producer))
            clonedConstants.push_back(producer);
          continue;
        }
        inputs.insert(operand);
      }
    SmallVector<Value> outputs;
    for (Operation *member : members)
      for (Value result : member->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inGroup.contains(user);
            }))
          outputs.push_back(result);

    OpBuilder builder(members.back()->getContext());
    builder.setInsertionPointAfter(members.back());
    SmallVector<Location> memberLocs;
    for (Operation *member : members)
      memberLocs.push_back(member->getLoc());
    Location loc = builder.getFusedLoc(memberLocs);
    auto fusion = FusionOp::create(builder, loc, ValueRange(outputs).getTypes(),
                                   inputs.getArrayRef());
    Block *body = builder.createBlock(&fusion.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
    for (Operation *constant : clonedConstants)
      builder.clone(*constant, mapping);
    for (Operation *member : members)
      builder.clone(*member, mapping);
    SmallVector<Value> yielded;
    for (Value output : outputs)
      yielded.push_back(mapping.lookup(output));
    YieldOp::create(builder, loc, yielded);

    for (auto [output, result] : llvm::zip(outputs, fusion.getResults()))
      output.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !inGroup.contains(use.getOwner());
      });
    for (Operation *member : llvm::reverse(members))
      member->erase();
    ++numRegions;
  }
};

} // namespace
