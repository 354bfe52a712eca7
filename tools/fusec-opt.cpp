//===- fusec-opt.cpp - MlirOptMain with the fuse dialect and passes ------===//

#include "ir/FuseDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<fuse::FuseDialect, mlir::func::FuncDialect>();
  fuse::registerAllFusePasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fusec-opt: the fuse dialect's opt tool\n", registry));
}
