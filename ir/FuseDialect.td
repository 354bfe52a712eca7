//===- FuseDialect.td - The fuse dialect -------------------*- tablegen -*-===//

#ifndef FUSE_DIALECT_TD
#define FUSE_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/CommonTypeConstraints.td"

def Fuse_Dialect : Dialect {
  let name = "fuse";
  let summary = "Tensor-level operations of the fusec fusion compiler";
  let description = [{
    Tensor operations on builtin ranked tensors (a dim is dynamic only
    where the function names it a symbol: ir/SymbolicDims.h):
    elementwise ops with NumPy broadcasting, reductions, layout ops and
    composites (softmax, layer_norm, ...) that a pass decomposes, plus
    `fuse.fusion`: a region that becomes one generated kernel.
  }];
  let cppNamespace = "::fuse";
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
}

// The dtypes fusec supports. Signed integers are MLIR's signless ones (read
// as signed), unsigned ones its ui types.
def Fuse_FloatTensor : RankedTensorOf<[F64, F32, F16, BF16]>;
def Fuse_NumericTensor : RankedTensorOf<[F64, F32, F16, BF16, I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Fuse_IntTensor : RankedTensorOf<[I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Fuse_BoolTensor : RankedTensorOf<[I1]>;
// What DequantizeLinear takes.
def Fuse_QuantizedTensor : RankedTensorOf<[I8, UI8, I16, UI16, I32,
    F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1FN, I<4>, UI<4>, I<2>, UI<2>]>;
// Any takes the narrow storage dtypes too (runtime/core/NarrowTypes.h): the ops
// that move values, select them, compare them or cast them.
def Fuse_AnyTensor : RankedTensorOf<[F64, F32, F16, BF16, I8, I16, I32, I64, UI8, UI16, UI32, UI64, I1,
    F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1FN, F8E8M0FNU, I<4>, UI<4>, I<2>, UI<2>]>;

// Result constraints named by the table's (Result, Operands) columns.
defvar Fuse_SameResultOfFloat = Fuse_FloatTensor;
defvar Fuse_SameResultOfNumeric = Fuse_NumericTensor;
defvar Fuse_SameResultOfInt = Fuse_IntTensor;
defvar Fuse_SameResultOfBool = Fuse_BoolTensor;
defvar Fuse_SameResultOfAny = Fuse_AnyTensor;
defvar Fuse_BoolResultOfFloat = Fuse_BoolTensor;
defvar Fuse_BoolResultOfNumeric = Fuse_BoolTensor;
defvar Fuse_BoolResultOfAny = Fuse_BoolTensor;

class Fuse_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fuse_Dialect, mnemonic, traits>;

#endif // FUSE_DIALECT_TD
