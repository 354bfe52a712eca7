#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

/// The pipeline on each function.
static std::string functionPipeline(const fuse::PipelineOptions &options) {
  return std::string("func.func(") +
         (options.fuse && options.attention
              ? "fuse-form-attention{max-wide-query-rows=" +
                    std::to_string(options.maxWideAttentionQueryRows) + "},"
              : std::string()) +
         "fuse-prepare-library-calls{epilogues=" +
         (options.libraryEpilogues ? "true" : "false") +
         " pad-columns=" + (options.padLibraryColumns ? "true" : "false") +
         "}" +
         ",fuse-decompose-composites,fuse-make-broadcasts-explicit,"
         "canonicalize,cse,fuse-form-fusion-regions" +
         (options.fuse ? "" : "{no-fuse=true}") + ")";
}

mlir::LogicalResult fuse::buildDefaultPipeline(mlir::OpPassManager &pm,
                                               const PipelineOptions &options) {
  // Added as a pass, not parsed: node names may hold the pipeline syntax's
  // commas and braces.
  if (!options.precision.empty()) {
    FuseLowerPrecisionOptions precision;
    precision.dtype = options.precision;
    precision.keep.assign(options.keepF32Nodes.begin(),
                          options.keepF32Nodes.end());
    pm.addPass(createFuseLowerPrecision(std::move(precision)));
  }
  return mlir::parsePassPipeline(functionPipeline(options), pm);
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
          PipelineOptions options;
          options.fuse = fuse;
          (void)buildDefaultPipeline(pm, options);
        });
}
