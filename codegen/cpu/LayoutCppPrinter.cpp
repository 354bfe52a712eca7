//===- LayoutCppPrinter.cpp - A layout kernel as C++ ---------------------===//
//
// An OpenMP loop over the output elements (split among threads as the
// LayoutParams say), around the per-element body of LayoutEmitter.
//
//===----------------------------------------------------------------------===//

#include "codegen/LayoutEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "ir/TypeUtils.h"

using namespace mlir;
using fusec::DType;

namespace fuse::layout {

namespace {

class CppEmitter : public LayoutEmitter {
public:
  CppEmitter(FusionOp fusion, Operation *op, const LayoutParams &params,
             const std::string &name)
      : LayoutEmitter(fusion, op, params, name) {}

private:
  void printSignature(DType resultType) override {
    os << cppKernelSignature(name, readsDimSizes()) << " {\n";
  }

  void printLoopHead(const std::string &count, DType resultType) override {
    for (BlockArgument arg : fusion.getBody().front().getArguments()) {
      const char *type = storageType(dtypeOf(arg.getType()));
      os << "const " << type << " *__restrict in" << arg.getArgNumber()
         << " = (const " << type << " *)fusec_inputs[" << arg.getArgNumber()
         << "];\n";
    }
    os << storageType(resultType) << " *__restrict out0 = ("
       << storageType(resultType) << " *)fusec_outputs[0];\n";
    // A symbolic count starts the OpenMP team only for enough elements.
    if (params.parallel)
      os << "#pragma omp parallel for schedule(static)"
         << (readsDimSizes() ? " if(" + count + " >= " +
                                   std::to_string(kCpuParallelThreshold) + ")"
                             : std::string())
         << "\n";
    os << "for (int64_t i = 0; i < " << count << "; ++i) {\n";
  }
};

} // namespace

FailureOr<std::string> printCppLayout(FusionOp fusion, Operation *op,
                                      const LayoutParams &params,
                                      const std::string &name,
                                      const SymbolicDims *symbolic) {
  return printLayoutWith<CppEmitter>(fusion, op, params, name, symbolic);
}

} // namespace fuse::layout
