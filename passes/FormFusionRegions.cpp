//===- FormFusionRegions.cpp - Pointwise fusion-region formation ---------===//
//
// Phase 1 decides: a union-find over the function's ops, grown in program
// order, merging each pointwise op with the groups of its pointwise
// producers when legal. Phase 2 materializes each group as a fuse.fusion.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

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

/// Ops that can be computed inside a pointwise kernel.
bool isFusible(Operation *op) {
  auto kind = dyn_cast<FusionKindOpInterface>(op);
  return kind && (kind.getFusionKind() == FusionKind::Elementwise ||
                  kind.getFusionKind() == FusionKind::Broadcast);
}

ArrayRef<int64_t> resultShape(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

int64_t numElementsOf(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

/// Groups of ops destined for one region each: a union-find whose groups
/// also keep their members.
class FusionGroups {
public:
  explicit FusionGroups(Block &block) {
    unsigned index = 0;
    for (Operation &op : block)
      position[&op] = index++;
  }

  void add(Operation *op) {
    parent[op] = op;
    groupMembers[op] = {op};
  }
  bool contains(Operation *op) const { return op && parent.count(op); }
  Operation *leader(Operation *op) const {
    while (parent.lookup(op) != op)
      op = parent.lookup(op);
    return op;
  }
  void merge(Operation *a, Operation *b) {
    Operation *keep = leader(a), *drop = leader(b);
    if (keep == drop)
      return;
    parent[drop] = keep;
    auto &kept = groupMembers[keep];
    kept.append(groupMembers[drop]);
    groupMembers.erase(drop);
    llvm::sort(kept, [&](Operation *x, Operation *y) {
      return position.lookup(x) < position.lookup(y);
    });
  }

  /// Members of the group led by `leaderOp`, in program order.
  ArrayRef<Operation *> members(Operation *leaderOp) const {
    return groupMembers.find(leaderOp)->second;
  }

  /// Leaders of all groups, ordered by their last member's position.
  SmallVector<Operation *> leaders() const {
    SmallVector<Operation *> result;
    for (auto &entry : groupMembers)
      result.push_back(entry.first);
    llvm::sort(result, [&](Operation *a, Operation *b) {
      return position.lookup(members(a).back()) <
             position.lookup(members(b).back());
    });
    return result;
  }

  /// If merging the groups of `a` and `b` would make a cycle, the first op
  /// outside them on the offending path; nullptr when the merge is legal.
  /// Each group becomes one region, so reachability is taken between groups
  /// (an op outside any group is a node of its own): the merge is illegal
  /// when a path leaves the two groups and comes back, even one that enters
  /// a third group through one member and leaves it through another.
  Operation *cycleThrough(Operation *a, Operation *b) const {
    Operation *first = leader(a), *second = leader(b);
    auto nodeOf = [&](Operation *op) { return contains(op) ? leader(op) : op; };
    auto isMerged = [&](Operation *node) {
      return node == first || node == second;
    };
    SmallVector<std::pair<Operation *, Operation *>> worklist;
    llvm::SmallPtrSet<Operation *, 32> visited;
    // Pushes the successors of `node`; returns the exit op of a path that
    // came back into the merged groups, if it finds one.
    auto pushSuccessors = [&](Operation *node, Operation *exit) -> Operation * {
      SmallVector<Operation *, 1> single = {node};
      ArrayRef<Operation *> nodeMembers =
          contains(node) ? members(node) : ArrayRef<Operation *>(single);
      for (Operation *member : nodeMembers)
        for (Operation *user : member->getUsers()) {
          Operation *next = nodeOf(user);
          if (isMerged(next)) {
            if (exit)
              return exit;
            continue;
          }
          if (visited.insert(next).second)
            worklist.push_back({next, exit ? exit : user});
        }
      return nullptr;
    };
    pushSuccessors(first, nullptr);
    pushSuccessors(second, nullptr);
    while (!worklist.empty()) {
      auto [node, exit] = worklist.pop_back_val();
      if (Operation *cycleExit = pushSuccessors(node, exit))
        return cycleExit;
    }
    return nullptr;
  }

private:
  DenseMap<Operation *, Operation *> parent;
  DenseMap<Operation *, SmallVector<Operation *>> groupMembers;
  DenseMap<Operation *, unsigned> position;
};

struct FormFusionRegions
    : public fuse::impl::FuseFormFusionRegionsBase<FormFusionRegions> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("fusion expects a function with a single block");
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    FusionGroups groups(block);
    decide(block, groups);
    for (Operation *leaderOp : groups.leaders())
      materialize(groups.members(leaderOp));
    // Splat constants now live inside the regions that use them.
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

  void decide(Block &block, FusionGroups &groups) {
    for (Operation &op : block.without_terminator()) {
      if (isa<ConstantOp>(&op)) {
        if (!isSplatConstant(&op))
          op.emitRemark() << "not fused: " << describeOp(&op)
                          << " is a dense constant; kernels read it as an "
                             "input buffer";
        continue;
      }
      if (!isFusible(&op)) {
        op.emitRemark() << "not fused: " << describeOp(&op)
                        << (isa<ReshapeOp>(&op)
                                ? " only changes the shape; it runs as a "
                                  "buffer alias between kernels"
                                : " is not a pointwise op");
        continue;
      }
      groups.add(&op);
      if (noFuse)
        continue;
      for (Value operand : op.getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!groups.contains(producer) ||
            groups.leader(producer) == groups.leader(&op))
          continue;
        if (resultShape(producer) != resultShape(&op)) {
          producer->emitRemark()
              << "not fused with its consumer " << describeOp(&op)
              << ": its result is broadcast from " << numElementsOf(operand)
              << " to " << numElementsOf(op.getResult(0))
              << " elements, and recomputing it per element would duplicate "
                 "work";
          continue;
        }
        if (Operation *exit = groups.cycleThrough(producer, &op)) {
          producer->emitRemark()
              << "not fused with its consumer " << describeOp(&op)
              << ": the path through " << describeOp(exit)
              << " outside the region would form a cycle";
          continue;
        }
        groups.merge(producer, &op);
      }
    }
  }

  void materialize(ArrayRef<Operation *> members) {
    llvm::SmallPtrSet<Operation *, 16> inGroup(members.begin(), members.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Operation *> clonedConstants;
    for (Operation *member : members)
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (inGroup.contains(producer))
          continue;
        if (isSplatConstant(producer)) {
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
