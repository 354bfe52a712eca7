// PROVISIONAL
#include "codegen/AttentionKernel.h"
namespace fuse {
std::string printCudaAttentionKernel(const std::string &name, const AttentionShape &shape, const AttentionParams &params, const AttentionSignature &signature);
}
