//===- GemvCppPrinter.cpp - The int8-weight GEMV as C++ ------------------===//
//
// One loop over the output channels, split among OpenMP threads as the
// schedule (schedule/GemvSchedule.h) says, each channel's int8 weight row
// dequantized and multiplied with every lhs row.
//
//===----------------------------------------------------------------------===//

#include "codegen/GemvEmitter.h"

#include "codegen/PointwiseKernel.h"
#include "codegen/ScalarExprPrinter.h"

#include <sstream>

using fusec::DType;

namespace fuse {

using namespace gemv;

std::string printCppGemv(const GemvShape &shape, const GemvParams &params,
                         const std::string &name) {
  const char *element = storageType(shape.dtype);
  std::string accType = shape.dtype == DType::F64 ? "double" : "float";
  std::ostringstream os;
  os << "// y[" << shape.rows << "x" << shape.n << "] = x[" << shape.rows << "x"
     << shape.k << "] @ dequantize(int8 w[" << shape.n << "x" << shape.k
     << "])^T\n";
  os << cppKernelSignature(name) << " {\n";
  os << "  const " << element << " *in0 = (const " << element
     << " *)fusec_inputs[0];\n";
  os << "  const int8_t *in1 = (const int8_t *)fusec_inputs[1];\n";
  os << "  const " << element << " *in2 = (const " << element
     << " *)fusec_inputs[2];\n";
  os << "  " << element << " *out0 = (" << element << " *)fusec_outputs[0];\n";
  os << "  #pragma omp parallel for schedule(static) if ("
     << (params.parallel ? "1" : "0") << ")\n";
  os << "  for (int64_t channel = 0; channel < " << shape.n
     << "; ++channel) {\n";
  os << "    const int8_t *row = in1 + channel * " << shape.k << ";\n";
  os << "    const " << accType
     << " scale = " << fromStorage(shape.dtype, "in2[channel]") << ";\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "    " << accType << " acc" << row << " = 0;\n";
  os << "    for (int64_t column = 0; column < " << shape.k
     << "; ++column) {\n";
  std::istringstream lines(
      accumulate(shape, accType, "row[column]", "in0", false));
  for (std::string line; std::getline(lines, line);)
    os << "      " << line << "\n";
  os << "    }\n";
  for (int64_t row = 0; row < shape.rows; ++row)
    os << "    out0[" << row * shape.n << " + channel] = "
       << toStorage(shape.dtype, "acc" + std::to_string(row)) << ";\n";
  os << "  }\n}\n";
  return os.str();
}

} // namespace fuse
