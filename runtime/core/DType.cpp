#include "runtime/core/DType.h"

namespace fusec {

static const DTypeInfo kDTypeInfos[] = {
#define FUSEC_DTYPE(Enum, name, bytes, bits, npy, storage, compute, kind)      \
  {name, bytes, bits, npy, storage, compute, DTypeKind::kind},
#include "runtime/core/DTypes.def"
};

static const DType kAllDTypes[] = {
#define FUSEC_DTYPE(Enum, ...) DType::Enum,
#include "runtime/core/DTypes.def"
};

const DTypeInfo &dtypeInfo(DType dtype) {
  return kDTypeInfos[static_cast<int>(dtype)];
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType dtype : kAllDTypes)
    if (name == dtypeName(dtype))
      return dtype;
  if (name == "bool")
    return DType::I1;
  return std::nullopt;
}

const DType *allDTypesBegin() { return std::begin(kAllDTypes); }
const DType *allDTypesEnd() { return std::end(kAllDTypes); }

} // namespace fusec
