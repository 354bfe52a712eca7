//===- FuseInterfaces.td - Interfaces of the fuse dialect --*- tablegen -*-===//

#ifndef FUSE_INTERFACES_TD
#define FUSE_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Fuse_FusionKindOpInterface : OpInterface<"FusionKindOpInterface"> {
  let description = [{
    What region formation may do with an op: merge it into a pointwise
    kernel, make it the root of a reduction kernel, give it a kernel of its
    own, or decompose it first. Every fuse op but constants, fusion regions
    and their terminators implements it.
  }];
  let cppNamespace = "::fuse";
  let methods = [
    InterfaceMethod<"The op's kind for fusion.", "::fuse::FusionKind",
                    "getFusionKind", (ins)>,
  ];
}

def Fuse_ReductionOpInterface : OpInterface<"ReductionOpInterface",
    [Fuse_FusionKindOpInterface]> {
  let description = [{
    A primitive reduction: combines the elements of its one operand along
    `axes` (sorted, non-negative) with a combiner; its result keeps the
    reduced dims as 1 (`keepdims`) or drops them. Its iteration space is the
    operand's shape.
  }];
  let cppNamespace = "::fuse";
  let methods = [
    InterfaceMethod<"How two partial results combine.",
                    "::fuse::ReductionCombiner", "getCombiner", (ins)>,
    InterfaceMethod<"The reduced axes of the operand, sorted.",
                    "::llvm::ArrayRef<int64_t>", "getReducedAxes", (ins),
                    [{ return $_op.getAxes(); }]>,
    InterfaceMethod<"The reduced operand.", "::mlir::Value",
                    "getReducedOperand", (ins),
                    [{ return $_op.getOperand(); }]>,
  ];
}

def Fuse_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface",
    [Fuse_FusionKindOpInterface]> {
  let description = [{
    An op of the elementwise table: its row (C expressions for the
    printers, reference, accepted dtypes) without a lookup by name.
  }];
  let cppNamespace = "::fuse";
  let methods = [
    InterfaceMethod<"The op's row of ElementwiseOps.def.",
                    "const ::fuse::ElementwiseOpInfo &", "getInfo", (ins)>,
  ];
}

#endif // FUSE_INTERFACES_TD
