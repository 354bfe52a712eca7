//===- LayoutOps.td - Ops that move elements ---------------*- tablegen -*-===//
//
// Included by FuseOps.td. Layout ops report FusionKind::Layout and run as a
// kernel of their own.
//
//===----------------------------------------------------------------------===//
