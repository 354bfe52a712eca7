//===- MakeBroadcastsExplicit.cpp - Implicit broadcasts as ops -----------===//
//
// An elementwise operand smaller than the result becomes a fuse.broadcast_to
// of it, so the edge reduce -> broadcast -> sub inside softmax is an op that
// fusion can see and keep in the reduction's kernel. Splat constants stay
// implicit: they are cloned into every region that uses them. A broadcast
// cast becomes a cast of the broadcast input (cheaper than its own kernel).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace fuse {
#define GEN_PASS_DEF_FUSEMAKEBROADCASTSEXPLICIT
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

bool isSplatConstant(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  return constant && isa<SplatElementsAttr>(constant.getValue());
}

struct MakeBroadcastsExplicit
    : public fuse::impl::FuseMakeBroadcastsExplicitBase<
          MakeBroadcastsExplicit> {
  void runOnOperation() override {
    getOperation().walk([&](FusionKindOpInterface op) {
      if (op.getFusionKind() != FusionKind::Elementwise)
        return;
      auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
      OpBuilder builder(op);
      for (OpOperand &operand : op->getOpOperands()) {
        auto type = cast<RankedTensorType>(operand.get().getType());
        if (type.getShape() == resultType.getShape() ||
            isSplatConstant(operand.get()))
          continue;
        // A cast is cheaper to repeat per element than to run as a kernel
        // of its own: broadcast its input and cast after.
        Value source = operand.get();
        auto castOp = source.getDefiningOp<CastOp>();
        if (castOp)
          source = castOp.getOperand();
        Value broadcast =
            BroadcastToOp::create(builder, op->getLoc(),
                                  cast<RankedTensorType>(source.getType())
                                      .clone(resultType.getShape()),
                                  source);
        if (castOp) {
          // The same conversion (saturation and rounding mode too).
          auto repeated =
              CastOp::create(builder, castOp.getLoc(),
                             type.clone(resultType.getShape()), broadcast);
          repeated.setNonSaturating(castOp.getNonSaturating());
          repeated.setRoundModeAttr(castOp.getRoundModeAttr());
          broadcast = repeated;
        }
        operand.set(broadcast);
        ++numBroadcasts;
      }
    });
  }
};

} // namespace
