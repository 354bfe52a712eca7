//===- Codegen.h - Fused IR to a runtime Program ---------------*- C++ -*-===//
#ifndef FUSE_CODEGEN_CODEGEN_H
#define FUSE_CODEGEN_CODEGEN_H

#include "runtime/core/Program.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace fuse {

/// A kernel's schedule, as `fusec --emit=schedule` prints it.
struct KernelSchedule {
  std::string kernel; ///< the kernel's name
  std::string kind;   ///< its KernelDesc::schedule ("row-reduction", ...)
  std::string params; ///< its params' toString()
};

/// Lowers a module whose single function holds fusion regions, constants,
/// reshapes and a return (the output of the default pipeline) to a Program
/// of generated kernels. Emits an error at the offending op on failure.
/// With `fastMath`, CUDA kernels call fast intrinsics (__sinf, __expf, ...).
/// `gpuArch` ("sm_90a"): the GPU the CUDA kernels are for; schedules use
/// its own instructions (sm_90a's wgmma) only when they are named.
/// `schedules`, when given, receives each kernel's schedule in order.
mlir::FailureOr<fusec::Program>
buildProgram(mlir::ModuleOp module, fusec::Target target, bool fastMath = false,
             const std::string &gpuArch = "",
             std::vector<KernelSchedule> *schedules = nullptr);

} // namespace fuse

#endif
