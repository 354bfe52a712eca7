#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

/// The pipeline on each function.
static std::string functionPipeline(bool fuse) {
  return std::string("func.func(fuse-decompose-composites,"
                     "fuse-make-broadcasts-explicit,canonicalize,cse,"
                     "fuse-form-fusion-regions") +
         (fuse ? "" : "{no-fuse=true}") + ")";
}

std::string fuse::defaultPipeline(bool fuse) {
  return "builtin.module(" + functionPipeline(fuse) + ")";
}

mlir::LogicalResult fuse::buildDefaultPipeline(mlir::OpPassManager &pm,
                                               bool fuse) {
  return mlir::parsePassPipeline(functionPipeline(fuse), pm);
}

void fuse::registerAllFusePasses() {
  registerFusePasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  for (bool fuse : {true, false})
    mlir::PassPipelineRegistration<>(
        fuse ? "fuse-default" : "fuse-unfused",
        fuse ? "Canonicalize, CSE and form fusion regions"
             : "Canonicalize, CSE and wrap every pointwise op alone",
        [fuse](mlir::OpPassManager &pm) {
          (void)buildDefaultPipeline(pm, fuse);
        });
}
