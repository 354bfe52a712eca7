//===- FuseOps.td - Operations of the fuse dialect ---------*- tablegen -*-===//

#ifndef FUSE_OPS_TD
#define FUSE_OPS_TD

include "ir/FuseDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

//===----------------------------------------------------------------------===//
// Elementwise ops: the classes here, the rows in ElementwiseOps.def.
//===----------------------------------------------------------------------===//

class Fuse_ElementwiseOp<string mnemonic>
    : Fuse_Op<mnemonic, [Pure, Fuse_Pointwise,
                         DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let hasFolder = 1;
  // Type inference and folding are shared by every row of the table.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location> loc,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr,
        ::mlir::OpaqueProperties, ::mlir::RegionRange,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::fuse::inferElementwiseResultType(getOperationName(), context,
                                                loc, operands, inferred);
    }
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return ::fuse::foldElementwise(getOperation(), adaptor.getOperands());
    }
  }];
}

class Fuse_UnaryElementwiseOp<string mnemonic, Type operandType,
                              Type resultType>
    : Fuse_ElementwiseOp<mnemonic> {
  let summary = "elementwise " # mnemonic;
  let arguments = (ins operandType:$operand);
  let results = (outs resultType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
}

class Fuse_BinaryElementwiseOp<string mnemonic, Type operandType,
                               Type resultType>
    : Fuse_ElementwiseOp<mnemonic> {
  let summary = "elementwise " # mnemonic # " with NumPy broadcasting";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

include "ElementwiseOps.td"

//===----------------------------------------------------------------------===//
// Other pointwise ops
//===----------------------------------------------------------------------===//

def Fuse_SelectOp : Fuse_Op<"select", [Pure, Fuse_Pointwise,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "cond ? true_value : false_value, with NumPy broadcasting";
  let arguments = (ins Fuse_BoolTensor:$cond, Fuse_AnyTensor:$true_value,
                       Fuse_AnyTensor:$false_value);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$cond `,` $true_value `,` $false_value attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

def Fuse_CastOp : Fuse_Op<"cast", [Pure, Fuse_Pointwise]> {
  let summary = "elementwise dtype conversion";
  let description = [{
    Float to integer truncates toward zero; anything to i1 is `x != 0`.
  }];
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_BroadcastToOp : Fuse_Op<"broadcast_to", [Pure, Fuse_Pointwise]> {
  let summary = "broadcast a tensor to a larger shape (NumPy rules)";
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_ReshapeOp : Fuse_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tensor with a new shape of the same size";
  let arguments = (ins Fuse_AnyTensor:$operand);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_ConstantOp : Fuse_Op<"constant", [Pure, ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a dense or splat tensor constant";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Fuse_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Fusion regions
//===----------------------------------------------------------------------===//

def Fuse_FusionOp : Fuse_Op<"fusion", [IsolatedFromAbove, Pure, SingleBlock]> {
  let summary = "a region of fused ops that becomes one kernel";
  let description = [{
    The body computes the results from the block arguments, which are bound
    to `ins`. Codegen turns each region into one kernel that reads each input
    once and writes each result once.
  }];
  let arguments = (ins Variadic<Fuse_AnyTensor>:$inputs);
  let results = (outs Variadic<Fuse_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? attr-dict `->` type($results)
    $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator that yields the region's results.
    YieldOp getYield();
  }];
}

def Fuse_YieldOp : Fuse_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusionOp">]> {
  let summary = "yields the results of a fusion region";
  let arguments = (ins Variadic<Fuse_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // FUSE_OPS_TD
