//===- PrepareLibraryCalls.cpp - Ops folded into matmul calls ------------===//
//
// A cuBLASLt call transposes its operands, scales the product, adds a bias
// and applies relu or gelu for free, while the product is still in
// registers; as separate ops each costs a pass over memory. This pass hands
// those ops to the call (see Passes.td for the rules) and makes batch
// broadcasts the call cannot stride over explicit.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/TypeUtils.h"

#include "mlir/IR/Builders.h"

namespace fuse {
#define GEN_PASS_DEF_FUSEPREPARELIBRARYCALLS
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

/// A transpose that swaps the last two dims and keeps the others.
bool swapsLastTwoDims(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = perm.size();
  if (rank < 2)
    return false;
  for (int64_t dim = 0; dim < rank - 2; ++dim)
    if (perm[dim] != dim)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// The value of a splat float constant, if `value` is one.
std::optional<double> splatValue(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

/// `value` as a vector of `n` elements, if it is one with leading unit dims.
Value asBiasVector(OpBuilder &builder, Value value, int64_t n) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 0 || type.getShape().back() != n ||
      fusec::numElements(toShape(type)) != n)
    return Value();
  if (type.getRank() == 1)
    return value;
  return ReshapeOp::create(builder, value.getLoc(), type.clone({n}), value)
      .getResult();
}

struct PrepareLibraryCalls
    : public fuse::impl::FusePrepareLibraryCallsBase<PrepareLibraryCalls> {
  using FusePrepareLibraryCallsBase::FusePrepareLibraryCallsBase;

  void runOnOperation() override {
    SmallVector<GemmOp> gemms;
    getOperation().walk([&](GemmOp op) { gemms.push_back(op); });
    for (GemmOp gemm : gemms)
      if (failed(decomposeComposite(gemm)))
        return signalPassFailure();
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp op : matmuls) {
      SmallVector<std::string> folded;
      foldTransposes(op, folded);
      broadcastBatches(op);
      std::string stop = foldConsumers(op, folded);
      numFolded += folded.size();
      InFlightDiagnostic remark = op.emitRemark();
      remark << describeOp(op) << " runs as one library call";
      if (!folded.empty()) {
        remark << " with its ";
        for (size_t i = 0; i < folded.size(); ++i)
          remark << (i == 0                   ? ""
                     : i + 1 == folded.size() ? " and "
                                              : ", ")
                 << folded[i];
        remark << " folded in";
      }
      if (!stop.empty())
        remark << "; " << stop;
    }
  }

  void foldTransposes(MatmulOp op, SmallVectorImpl<std::string> &folded) {
    for (bool isLhs : {true, false}) {
      OpOperand &operand = isLhs ? op.getLhsMutable() : op.getRhsMutable();
      auto transpose = operand.get().getDefiningOp<TransposeOp>();
      if (!transpose || !swapsLastTwoDims(transpose))
        continue;
      operand.assign(transpose.getOperand());
      if (isLhs)
        op.setTransposeA(!op.getTransposeA());
      else
        op.setTransposeB(!op.getTransposeB());
      folded.push_back(std::string("transpose of the ") +
                       (isLhs ? "lhs" : "rhs"));
      if (transpose->use_empty())
        transpose->erase();
    }
  }

  /// A call strides over an operand's batch when it is all ones (the same
  /// matrix each time) or the whole batch; anything else is broadcast.
  void broadcastBatches(MatmulOp op) {
    MatmulShape shape = op.getMatmulShape();
    OpBuilder builder(op);
    for (bool isLhs : {true, false}) {
      OpOperand &operand = isLhs ? op.getLhsMutable() : op.getRhsMutable();
      const fusec::Shape &batch = isLhs ? shape.lhsBatch : shape.rhsBatch;
      if (fusec::numElements(batch) == 1 || batch == shape.batch)
        continue;
      auto type = cast<RankedTensorType>(operand.get().getType());
      fusec::Shape full = shape.batch;
      full.insert(full.end(), type.getShape().end() - 2, type.getShape().end());
      operand.assign(BroadcastToOp::create(builder, op.getLoc(),
                                           type.clone(full), operand.get()));
    }
  }

  /// Folds the single-use chain after `op`: a scale, then (with epilogues)
  /// a bias add and an activation. Returns why the chain stopped, for the
  /// remark ("" when nothing follows that could have been folded).
  std::string foldConsumers(MatmulOp op, SmallVectorImpl<std::string> &folded) {
    MatmulShape shape = op.getMatmulShape();
    bool isF64 = op.getType().getElementType().isF64();
    std::string why;
    if (!epilogues)
      why = "bias adds and activations are folded on the CUDA target only";
    else if (isF64)
      why = "f64 calls take no epilogue";
    else if (shape.k == 0)
      why = "a product over 0 elements takes no epilogue";
    else if (!isOneProduct(shape, op.getTransposeA()))
      why = "a batched call takes no epilogue";
    bool canEpilogue = why.empty();
    while (op->hasOneUse()) {
      Operation *user = *op->getUsers().begin();
      bool untouched = !op.getBias() && op.getEpilogue() == "none";
      if (auto mul = dyn_cast<MulOp>(user)) {
        Value other =
            mul.getLhs() == op.getResult() ? mul.getRhs() : mul.getLhs();
        std::optional<double> scale = splatValue(other);
        if (!untouched || mul.getType() != op.getType() || !scale ||
            !std::isfinite(*scale) || *scale == 0.0)
          return "";
        op.setAlpha(APFloat(op.getAlpha().convertToDouble() * *scale));
        folded.push_back("scale");
      } else if (auto add = dyn_cast<AddOp>(user)) {
        if (!untouched || add.getType() != op.getType())
          return "";
        if (!canEpilogue)
          return "the bias add runs in a kernel after the call: " + why;
        Value other =
            add.getLhs() == op.getResult() ? add.getRhs() : add.getLhs();
        op->moveBefore(add);
        OpBuilder builder(op);
        Value bias = asBiasVector(builder, other, shape.n);
        if (!bias)
          return "";
        op.getBiasMutable().assign(bias);
        folded.push_back("bias add");
      } else if (isa<ReluOp, GeluOp>(user)) {
        auto gelu = dyn_cast<GeluOp>(user);
        if (op.getEpilogue() != "none")
          return "";
        if (!canEpilogue)
          return "the activation runs in a kernel after the call: " + why;
        if (gelu && gelu.getApproximate() != "tanh")
          return "exact (erf) gelu is not a cuBLASLt epilogue (only its "
                 "tanh approximation is); it runs in a kernel after the call";
        op->moveBefore(user);
        op.setEpilogue(gelu ? "gelu_tanh" : "relu");
        folded.push_back(gelu ? "gelu_tanh epilogue" : "relu epilogue");
      } else {
        return "";
      }
      user->getResult(0).replaceAllUsesWith(op.getResult());
      user->erase();
    }
    return "";
  }
};

} // namespace
