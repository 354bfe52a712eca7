//===- Passes.td - Every IR->IR pass of fusec --------------*- tablegen -*-===//

#ifndef FUSE_PASSES_TD
#define FUSE_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FuseFormFusionRegions
    : Pass<"fuse-form-fusion-regions", "mlir::func::FuncOp"> {
  let summary = "Group pointwise ops into fuse.fusion regions, one per kernel";
  let description = [{
    Decide, then materialize. Walking the function in order, each pointwise
    op joins the groups of its pointwise producers when that computes no
    element twice and forms no cycle through an op left outside:

      %1 = fuse.sin %0; %2 = fuse.sin %1; %3 = fuse.mul %2, %y
        => %3 = fuse.fusion ins(%0, %y) { sin; sin; mul; fuse.yield }

    A producer whose result is broadcast into a larger consumer keeps its own
    kernel, so expensive work is not duplicated. A value used outside its
    group becomes an extra result of the region (multi-output kernels).
    Splat constants are cloned into the regions that use them; dense
    constants become region inputs. Every op left outside a region, and every
    producer/consumer edge not fused, gets a remark saying why.
  }];
  let options = [
    Option<"noFuse", "no-fuse", "bool", /*default=*/"false",
           "One region per op: the eager-like baseline and the reference">,
  ];
  let statistics = [
    Statistic<"numRegions", "num-regions", "Fusion regions formed">,
  ];
  let dependentDialects = ["fuse::FuseDialect"];
}

#endif // FUSE_PASSES_TD
