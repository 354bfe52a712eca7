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

/// Whether `value` is a splat float constant within 1% of `expected` (the
/// exporters' constants rounded to bf16 are within 0.4%).
bool isSplatNear(Value value, double expected) {
  std::optional<double> splat = splatValue(value);
  return splat && std::abs(*splat - expected) <= 0.01 * std::abs(expected);
}

/// The operands of the tree of multiplications that ends at `value`: its
/// inner products are taken apart where `value` alone uses them (`muls`
/// gets their ops, the root first).
void productFactors(Value value, bool isRoot, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> &muls) {
  auto mul = value.getDefiningOp<MulOp>();
  if (!mul || (!isRoot && !value.hasOneUse())) {
    factors.push_back(value);
    return;
  }
  muls.push_back(mul);
  productFactors(mul.getLhs(), false, factors, muls);
  productFactors(mul.getRhs(), false, factors, muls);
}

/// Whether `factors` are `x` `xCount` times and one splat near each of
/// `constants`, in any order.
bool factorsAre(ArrayRef<Value> factors, Value x, int xCount,
                ArrayRef<double> constants) {
  if (factors.size() != static_cast<size_t>(xCount) + constants.size())
    return false;
  SmallVector<bool> used(constants.size(), false);
  for (Value factor : factors) {
    if (factor == x) {
      --xCount;
      continue;
    }
    bool matched = false;
    for (size_t i = 0; i < constants.size() && !matched; ++i)
      if (!used[i] && isSplatNear(factor, constants[i]))
        used[i] = matched = true;
    if (!matched)
      return false;
  }
  return xCount == 0;
}

/// The ops of GELU's tanh approximation over `x` written out as exporters
/// write it, x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (x^3
/// as pow(x, 3) or products; any order of the factors), the op giving the
/// activation first; empty unless exactly those ops use `x`.
SmallVector<Operation *> writtenOutTanhGelu(Value x) {
  constexpr double kCubic = 0.044715, kSqrt2OverPi = 0.7978845608028654;
  for (Operation *user : x.getUsers()) {
    auto inner = dyn_cast<AddOp>(user);
    if (!inner || !inner->hasOneUse())
      continue;
    // inner = x + 0.044715 * x^3
    Value cubic = inner.getLhs() == x ? inner.getRhs() : inner.getLhs();
    if (!cubic.hasOneUse())
      continue;
    SmallVector<Value> factors;
    SmallVector<Operation *> ops{inner};
    productFactors(cubic, true, factors, ops);
    if (factors.size() == 2) { // 0.044715 * pow(x, 3)
      for (size_t i = 0; i < 2; ++i) {
        auto pow = factors[i].getDefiningOp<PowOp>();
        if (pow && pow->hasOneUse() && pow.getLhs() == x &&
            isSplatNear(pow.getRhs(), 3.0)) {
          ops.push_back(pow);
          factors[i] = x;
          factors.append({x, x});
          break;
        }
      }
    }
    if (!factorsAre(factors, x, 3, {kCubic}))
      continue;
    // tanh(sqrt(2/pi) * inner), then 1 + that
    auto scaled = dyn_cast<MulOp>(*inner->getUsers().begin());
    if (!scaled || !scaled->hasOneUse())
      continue;
    factors.clear();
    size_t scaledOps = ops.size();
    productFactors(scaled.getResult(), true, factors, ops);
    if (factors.size() != 2 || !llvm::is_contained(factors, inner.getResult()))
      continue;
    factors.erase(llvm::find(factors, inner.getResult()));
    if (ops.size() != scaledOps + 1 || !isSplatNear(factors[0], kSqrt2OverPi))
      continue;
    auto tanh = dyn_cast<TanhOp>(*scaled->getUsers().begin());
    if (!tanh || !tanh->hasOneUse())
      continue;
    auto onePlus = dyn_cast<AddOp>(*tanh->getUsers().begin());
    if (!onePlus || !onePlus->hasOneUse() ||
        !isSplatNear(onePlus.getLhs() == tanh.getResult() ? onePlus.getRhs()
                                                          : onePlus.getLhs(),
                     1.0))
      continue;
    ops.append({tanh, onePlus});
    // The product of x, 0.5 and (1 + tanh(...)): climb the single-use
    // multiplications above 1 + tanh until their factors are exactly those.
    Operation *top = *onePlus->getUsers().begin();
    while (isa<MulOp>(top)) {
      SmallVector<Value> outer;
      SmallVector<Operation *> outerOps;
      productFactors(top->getResult(0), true, outer, outerOps);
      if (llvm::is_contained(outer, onePlus.getResult())) {
        outer.erase(llvm::find(outer, onePlus.getResult()));
        if (factorsAre(outer, x, 1, {0.5}) &&
            top->getResult(0).getType() == x.getType()) {
          SmallVector<Operation *> all(outerOps);
          all.append(ops.begin(), ops.end());
          // Nothing else may read x: the call's output becomes the
          // activation.
          for (Operation *reader : x.getUsers())
            if (!llvm::is_contained(all, reader))
              return {};
          return all;
        }
      }
      if (!top->hasOneUse())
        break;
      top = *top->getUsers().begin();
    }
  }
  return {};
}

/// `value` as a vector of `n` elements, if it is one with leading unit dims.
Value asBiasVector(OpBuilder &builder, Value value, int64_t n) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 0 || !type.hasStaticShape() ||
      type.getShape().back() != n || fusec::numElements(toShape(type)) != n)
    return Value();
  if (type.getRank() == 1)
    return value;
  return ReshapeOp::create(builder, value.getLoc(), type.clone({n}), value)
      .getResult();
}

/// Few rows make a matmul memory bound on its weights: with int8 weights
/// a generated GEMV reads them as int8. More rows are compute bound: the
/// weights are dequantized by a kernel and the library multiplies.
constexpr int64_t kMaxQuantizedGemvRows = 8;

/// Whether `value` is absent or a constant of zeros.
bool isAbsentOrZero(Value value) {
  if (!value)
    return true;
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  return dense && llvm::all_of(dense.getValues<APInt>(),
                               [](const APInt &v) { return v.isZero(); });
}

/// Padding a call's columns to whole 16-byte rows pays for the slice after
/// it only on calls this large (GPT-2's head: 1024 x 50257).
constexpr int64_t kMinPaddedColumns = 256;
constexpr int64_t kMinPaddedRows = 64;

/// `value` with zeros appended along `axis` up to `size`.
DenseElementsAttr paddedWithZeros(DenseElementsAttr value, int64_t axis,
                                  int64_t size) {
  auto type = value.getType();
  SmallVector<int64_t> shape(type.getShape());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (int64_t i = axis + 1; i < type.getRank(); ++i)
    inner *= shape[i];
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t oldRow = shape[axis] * inner * elementBytes;
  int64_t newRow = size * inner * elementBytes;
  shape[axis] = size;
  auto paddedType = type.clone(shape);
  std::vector<char> bytes(outer * newRow, 0);
  if (value.isSplat()) {
    ArrayRef<char> element = value.getRawData();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < oldRow; i += elementBytes)
        std::copy(element.begin(), element.end(),
                  bytes.begin() + o * newRow + i);
  } else {
    ArrayRef<char> raw = value.getRawData();
    for (int64_t o = 0; o < outer; ++o)
      std::copy(raw.begin() + o * oldRow, raw.begin() + (o + 1) * oldRow,
                bytes.begin() + o * newRow);
  }
  return DenseElementsAttr::getFromRawBuffer(paddedType, bytes);
}

/// The int8 matrix `weight` [k, n] as [n, k]: a transposed constant when it
/// is one (weights usually are), else a transpose op.
Value transposedWeight(OpBuilder &builder, Location loc, Value weight) {
  auto type = cast<RankedTensorType>(weight.getType());
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  auto transposedType = type.clone({columns, rows});
  auto constant = weight.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  if (dense && !dense.isSplat()) {
    ArrayRef<char> bytes = dense.getRawData();
    std::vector<char> transposed(bytes.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c)
        transposed[c * rows + r] = bytes[r * columns + c];
    return ConstantOp::create(
        builder, loc, transposedType,
        DenseElementsAttr::getFromRawBuffer(transposedType, transposed));
  }
  if (dense)
    return ConstantOp::create(builder, loc, transposedType,
                              dense.reshape(transposedType));
  return TransposeOp::create(builder, loc, transposedType, weight,
                             ArrayRef<int64_t>{1, 0});
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
      std::string quantized;
      if (foldQuantizedWeights(op, quantized)) {
        ++numFolded;
        continue;
      }
      std::string stop =
          quantized.empty() ? foldConsumers(op, folded) : quantized;
      numFolded += folded.size();
      std::string padded = padColumns ? padUnalignedColumns(op) : "";
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
      if (!padded.empty())
        remark << "; " << padded;
    }
  }

  /// A call whose result rows are not a whole number of 16-byte chunks
  /// (GPT-2's 50257 logits) leaves cuBLASLt only its slow kernels: 4x
  /// slower on an H200. With a constant rhs (and bias), they are padded
  /// with zero columns up to the alignment at compile time and a slice of
  /// the result is what the users read (fused into their kernels). Returns
  /// what was done, for the remark ("" when nothing was).
  std::string padUnalignedColumns(MatmulOp op) {
    auto resultType = op.getType();
    if (resultType.getRank() < 2)
      return "";
    // The narrower of the operands' and the result's dtypes sets the
    // alignment (bf16 operands, f32 result: 8 columns).
    int64_t bytes = std::min(resultType.getElementTypeBitWidth(),
                             op.getRhs().getType().getElementTypeBitWidth()) /
                    8;
    int64_t alignment = bytes > 0 && bytes <= 16 ? 16 / bytes : 1;
    MatmulShape shape = op.getMatmulShape();
    // A symbolic call is not padded (its slice would be symbolic).
    if (!op.getLhs().getType().hasStaticShape() ||
        !op.getRhs().getType().hasStaticShape())
      return "";
    int64_t rows = shape.m * fusec::numElements(shape.batch);
    if (alignment <= 1 || shape.n % alignment == 0 ||
        shape.n < kMinPaddedColumns || rows < kMinPaddedRows)
      return "";
    auto rhs = op.getRhs().getDefiningOp<ConstantOp>();
    auto rhsValue =
        rhs ? dyn_cast<DenseElementsAttr>(rhs.getValue()) : DenseElementsAttr();
    if (!rhsValue || rhsValue.getType().getRank() != 2)
      return "";
    ConstantOp biasConstant;
    DenseElementsAttr biasValue;
    if (Value bias = op.getBias()) {
      biasConstant = bias.getDefiningOp<ConstantOp>();
      biasValue = biasConstant
                      ? dyn_cast<DenseElementsAttr>(biasConstant.getValue())
                      : DenseElementsAttr();
      if (!biasValue)
        return "";
    }
    int64_t columns = llvm::alignTo(shape.n, alignment);
    OpBuilder builder(op);
    // The columns are rhs's rows when it is stored transposed ([n, k]).
    bool columnsAreRows = op.getTransposeB();
    op.getRhsMutable().assign(ConstantOp::create(
        builder, op.getLoc(),
        paddedWithZeros(rhsValue, columnsAreRows ? 0 : 1, columns)));
    if (biasValue)
      op.getBiasMutable().assign(ConstantOp::create(
          builder, op.getLoc(), paddedWithZeros(biasValue, 0, columns)));
    SmallVector<int64_t> paddedShape(resultType.getShape());
    paddedShape.back() = columns;
    op.getResult().setType(resultType.clone(paddedShape));
    builder.setInsertionPointAfter(op);
    int64_t lastAxis = resultType.getRank() - 1;
    auto slice = SliceOp::create(
        builder, op.getLoc(), resultType, op.getResult(),
        builder.getDenseI64ArrayAttr({0}),
        builder.getDenseI64ArrayAttr({shape.n}),
        builder.getDenseI64ArrayAttr({lastAxis}), DenseI64ArrayAttr());
    op.getResult().replaceAllUsesExcept(slice.getResult(), slice);
    for (ConstantOp old : {rhs, biasConstant})
      if (old && old->use_empty())
        old->erase();
    return "its " + std::to_string(shape.n) + " columns are padded to " +
           std::to_string(columns) +
           " (whole 16-byte rows, which cuBLASLt's fast kernels need) and "
           "its users read a slice of the result";
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

  /// matmul(x, dequantize_linear(int8 w, one scale per output channel))
  /// with few rows becomes fuse.quantized_matmul (true). Otherwise false,
  /// with `why` saying what the int8 weights get instead ("" when the rhs
  /// is no such dequantization).
  bool foldQuantizedWeights(MatmulOp op, std::string &why) {
    auto dequantize = op.getRhs().getDefiningOp<DequantizeLinearOp>();
    if (!dequantize)
      return false;
    auto weightType = dequantize.getOperand().getType();
    auto scaleType = dequantize.getScale().getType();
    if (!weightType.getElementType().isSignlessInteger(8) ||
        weightType.getRank() != 2 || scaleType.getRank() != 1 ||
        !isAbsentOrZero(dequantize.getZeroPoint()))
      return false;
    // The scale runs along the output channels: dim 1 of a [k, n] weight,
    // dim 0 of an [n, k] one (transpose_b).
    int64_t channelAxis = op.getTransposeB() ? 0 : 1;
    if (*normalizeAxis(dequantize.getAxis(), 2) != channelAxis ||
        op.getTransposeA() ||
        op.getLhs().getType().getElementType() != scaleType.getElementType())
      return false;
    auto lhsType = op.getLhs().getType();
    int64_t rows = 1;
    for (int64_t dim : lhsType.getShape().drop_back())
      rows *= dim;
    if (rows > kMaxQuantizedGemvRows) {
      why = "its int8 weights (" + std::to_string(rows) + " rows, more than " +
            std::to_string(kMaxQuantizedGemvRows) +
            ") are dequantized by a kernel before the call";
      return false;
    }
    OpBuilder builder(op);
    Value weight = dequantize.getOperand();
    if (!op.getTransposeB())
      weight = transposedWeight(builder, op.getLoc(), weight);
    auto gemv =
        QuantizedMatmulOp::create(builder, op.getLoc(), op.getType(),
                                  op.getLhs(), weight, dequantize.getScale());
    gemv.emitRemark() << describeOp(op) << " with int8 weights and " << rows
                      << " row(s) runs as one quantized GEMV kernel: weights "
                         "read as int8 and dequantized in registers";
    op.getResult().replaceAllUsesWith(gemv.getResult());
    op.erase();
    if (dequantize->use_empty())
      dequantize.erase();
    return true;
  }

  /// A call strides over an operand's batch when it is all ones (the same
  /// matrix each time) or the whole batch; anything else is broadcast.
  void broadcastBatches(MatmulOp op) {
    MatmulShape shape = op.getMatmulShape();
    OpBuilder builder(op);
    for (bool isLhs : {true, false}) {
      OpOperand &operand = isLhs ? op.getLhsMutable() : op.getRhsMutable();
      const fusec::Shape &batch = isLhs ? shape.lhsBatch : shape.rhsBatch;
      if (batch == shape.batch ||
          llvm::all_of(batch, [](int64_t dim) { return dim == 1; }))
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
          return "the add runs in a kernel after the call: its other "
                 "operand is not a vector of the last dim (" +
                 std::to_string(shape.n) + ")";
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
    // Several readers of the output: GELU's tanh approximation written out.
    if (canEpilogue && op.getEpilogue() == "none") {
      SmallVector<Operation *> gelu = writtenOutTanhGelu(op.getResult());
      if (!gelu.empty()) {
        op.setEpilogue("gelu_tanh");
        folded.push_back("gelu_tanh epilogue (written out)");
        gelu.front()->getResult(0).replaceAllUsesWith(op.getResult());
        // Readers before what they read (each is read only inside).
        for (bool erased = true; erased;) {
          erased = false;
          for (size_t i = 0; i < gelu.size() && !erased; ++i)
            if (gelu[i]->use_empty()) {
              gelu[i]->erase();
              gelu.erase(gelu.begin() + i);
              erased = true;
            }
        }
      }
    }
    return "";
  }
};

} // namespace
