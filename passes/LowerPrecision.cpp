//===- LowerPrecision.cpp - A model's f32 tensors in bf16 or f16 ----------===//
//
// --precision: the f32 tensors of a model become bf16 (or f16) before any
// other pass runs, so the rest of the pipeline sees what it sees for a model
// exported in that dtype (tensor-core matmuls and attention, half the bytes
// in every memory-bound kernel). The policy, per op:
//
//   - lowered: every op on f32 tensors not listed below. Matmuls accumulate
//     in f32 (cuBLASLt's compute type); reductions, softmax and the
//     statistics of normalizations are computed in f32 inside their kernels
//     as for any bf16/f16 model (DecomposeComposites); weights are converted
//     once, here, finite values saturating to the dtype's largest (f32's
//     lowest becomes bf16's lowest, not -inf: `(1 - mask) * lowest` stays 0
//     where the mask is 1);
//   - DequantizeLinear takes the low dtype through its scale (the result's
//     dtype is the scale's), so an int8-weight matmul still becomes the
//     int8 GEMV, in bf16;
//   - kept in f32: bitcasts (their bits are the semantics), an int8 matmul
//     already formed (its scale's dtype is its lhs's), the nodes the user
//     names (--keep-f32), and every f32 value a
//     cast to an integer or bool reads, back through the ops computing it up
//     to a matmul or attention (index and bucket arithmetic, as T5's relative
//     positions, must stay exact);
//   - the function's f32 inputs and outputs keep their dtype: a cast at each
//     boundary, which fusion then puts in the kernels around it; a matmul
//     read only in f32 writes its f32 accumulator instead.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/FuseDialect.h"
#include "runtime/core/HalfFloat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

namespace fuse {
#define GEN_PASS_DEF_FUSELOWERPRECISION
#include "passes/Passes.h.inc"
} // namespace fuse

using namespace mlir;
using namespace fuse;

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

bool touchesF32(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isF32Tensor) ||
         llvm::any_of(op->getResultTypes(), isF32Tensor);
}

/// The 16-bit pattern of `value` in the low dtype, rounded to nearest even;
/// a finite value past the dtype's range saturates to its largest finite
/// value of that sign (a weight or mask constant must stay finite).
/// `saturated` counts those.
uint16_t lowBits(float value, bool bf16, int64_t &saturated) {
  uint16_t bits = bf16 ? fusec_f32_to_bf16(value) : fusec_f32_to_f16(value);
  uint16_t magnitude = bits & 0x7fffu;
  uint16_t infinity = bf16 ? 0x7f80u : 0x7c00u;
  if (magnitude == infinity && std::isfinite(value)) {
    bits = (bits & 0x8000u) | (bf16 ? 0x7f7fu : 0x7bffu);
    ++saturated;
  }
  return bits;
}

/// A constant's value converted to `lowType` elements; `saturated` counts
/// the elements (of the stored ones: one for a splat) past its range.
DenseElementsAttr lowConstant(DenseElementsAttr value, FloatType lowType,
                              int64_t &saturated) {
  auto type = cast<RankedTensorType>(value.getType()).clone(lowType);
  bool bf16 = lowType.isBF16();
  if (value.isSplat()) {
    uint16_t bits = lowBits(value.getSplatValue<float>(), bf16, saturated);
    return DenseElementsAttr::get(
        type, APFloat(lowType.getFloatSemantics(), APInt(16, bits)));
  }
  // The raw f32 data, read directly (weights run to hundreds of millions
  // of elements).
  ArrayRef<char> raw = value.getRawData();
  std::vector<uint16_t> bits(value.getNumElements());
  for (size_t i = 0; i < bits.size(); ++i) {
    float element;
    std::memcpy(&element, raw.data() + i * sizeof(float), sizeof(float));
    bits[i] = lowBits(element, bf16, saturated);
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(reinterpret_cast<const char *>(bits.data()),
                           bits.size() * sizeof(uint16_t)));
}

/// The node name an op was imported from (its NameLoc), or "".
StringRef nodeNameOf(Operation *op) {
  StringRef name;
  op->getLoc()->walk([&](Location location) {
    if (auto named = dyn_cast<NameLoc>(location)) {
      name = named.getName().getValue();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

struct LowerPrecision
    : public fuse::impl::FuseLowerPrecisionBase<LowerPrecision> {
  using FuseLowerPrecisionBase::FuseLowerPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    FloatType lowType;
    if (dtype == "bf16")
      lowType = BFloat16Type::get(context);
    else if (dtype == "f16")
      lowType = Float16Type::get(context);
    else {
      module.emitError() << "--precision: '" << dtype
                         << "' is not a precision fusec lowers to (bf16 "
                            "or f16)";
      return signalPassFailure();
    }
    llvm::StringSet<> keepNames;
    for (const std::string &name : keep)
      keepNames.insert(name);
    llvm::StringSet<> namesSeen;
    module.walk([&](func::FuncOp function) {
      lowerFunction(function, lowType, keepNames, namesSeen);
    });
    for (const std::string &name : keep)
      if (!namesSeen.contains(name)) {
        module.emitError() << "--keep-f32: the model has no node named '"
                           << name << "'";
        return signalPassFailure();
      }
  }

  /// The ops whose f32 tensors stay f32 (the policy above).
  llvm::DenseSet<Operation *> keptOps(func::FuncOp function,
                                      const llvm::StringSet<> &keepNames,
                                      llvm::StringSet<> &namesSeen) {
    llvm::DenseSet<Operation *> kept;
    SmallVector<Operation *> exactSlice;
    function.walk([&](Operation *op) {
      StringRef name = nodeNameOf(op);
      if (!name.empty() && keepNames.contains(name)) {
        namesSeen.insert(name);
        kept.insert(op);
      }
      if (isa<BitcastOp, QuantizedMatmulOp>(op))
        kept.insert(op);
      if (auto castOp = dyn_cast<CastOp>(op))
        if (isF32Tensor(castOp.getOperand().getType()) &&
            !isa<FloatType>(
                cast<RankedTensorType>(castOp.getType()).getElementType()))
          exactSlice.push_back(op);
    });
    // Back from each cast to an integer through the ops computing its f32
    // operand, up to a matmul or attention (whose result is not exact).
    while (!exactSlice.empty()) {
      Operation *op = exactSlice.pop_back_val();
      // A cast to an integer may be kept already (a named node): what it
      // reads is still followed.
      if (!kept.insert(op).second && !isa<CastOp>(op))
        continue;
      for (Value operand : op->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (producer && isF32Tensor(operand.getType()) &&
            !isa<MatmulOp, GemmOp, AttentionOp, ConstantOp>(producer) &&
            !kept.contains(producer))
          exactSlice.push_back(producer);
      }
    }
    return kept;
  }

  void lowerFunction(func::FuncOp function, FloatType lowType,
                     const llvm::StringSet<> &keepNames,
                     llvm::StringSet<> &namesSeen) {
    if (function.isExternal())
      return;
    llvm::DenseSet<Operation *> kept = keptOps(function, keepNames, namesSeen);
    Block &entry = function.getBody().front();

    // The low version of an f32 value that stays f32: a converted constant,
    // or a cast after its definition (one per value).
    llvm::DenseMap<Value, Value> lowVersions;
    SmallVector<ConstantOp> convertedConstants;
    auto lowVersionOf = [&](Value value) -> Value {
      auto [it, inserted] = lowVersions.try_emplace(value);
      if (!inserted)
        return it->second;
      OpBuilder builder(&getContext());
      auto constant = value.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (Operation *producer = value.getDefiningOp())
        builder.setInsertionPointAfter(producer);
      else
        builder.setInsertionPointToStart(&entry);
      auto lowTensorType =
          cast<RankedTensorType>(value.getType()).clone(lowType);
      Value low;
      if (dense) {
        int64_t saturated = 0;
        low = ConstantOp::create(builder, value.getLoc(),
                                 lowConstant(dense, lowType, saturated));
        if (saturated)
          constant.emitRemark()
              << "--precision: " << saturated << " of "
              << (dense.isSplat() ? 1 : dense.getNumElements())
              << " values of this constant lie past "
              << (lowType.isBF16() ? "bf16" : "f16")
              << "'s largest finite value and saturate to it";
        convertedConstants.push_back(constant);
      } else
        low = CastOp::create(builder, value.getLoc(), lowTensorType, value);
      ++numBoundaryCasts;
      it->second = low;
      return low;
    };

    SmallVector<Operation *> lowered;
    llvm::DenseSet<Operation *> loweredSet;
    for (Operation &op : llvm::make_early_inc_range(entry)) {
      if (kept.contains(&op) || isa<ConstantOp, func::ReturnOp>(op) ||
          !touchesF32(&op))
        continue;
      for (OpOperand &operand : op.getOpOperands())
        if (isF32Tensor(operand.get().getType()))
          operand.set(lowVersionOf(operand.get()));
      for (OpResult result : op.getResults())
        if (isF32Tensor(result.getType()))
          result.setType(
              cast<RankedTensorType>(result.getType()).clone(lowType));
      lowered.push_back(&op);
      loweredSet.insert(&op);
    }
    numLowered += lowered.size();

    // A lowered value read by an op that stays f32 (or returned): one cast
    // back after its definition for all of those readers.
    for (Operation *op : lowered)
      for (OpResult result : op->getResults()) {
        auto type = cast<RankedTensorType>(result.getType());
        if (type.getElementType() != lowType)
          continue;
        SmallVector<OpOperand *> wideReaders;
        for (OpOperand &use : result.getUses())
          if (!loweredSet.contains(use.getOwner()))
            wideReaders.push_back(&use);
        if (wideReaders.empty())
          continue;
        // A matmul read only in f32 (GPT-2's logits) writes its f32
        // accumulator as it is: no cast kernel, no rounding to 16 bits.
        auto matmul = dyn_cast<MatmulOp>(op);
        if (matmul && !matmul.getBias() &&
            wideReaders.size() == llvm::range_size(result.getUses())) {
          result.setType(type.clone(Float32Type::get(op->getContext())));
          continue;
        }
        OpBuilder builder(op->getContext());
        builder.setInsertionPointAfter(op);
        Value wide = CastOp::create(builder, op->getLoc(),
                                    type.clone(builder.getF32Type()), result);
        ++numBoundaryCasts;
        for (OpOperand *use : wideReaders)
          use->set(wide);
      }
    // Weights only lowered ops read are not kept twice.
    for (ConstantOp constant : convertedConstants)
      if (constant->use_empty())
        constant->erase();
  }
};

} // namespace
