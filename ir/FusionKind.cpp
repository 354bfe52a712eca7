//===- FusionKind.cpp - The dialect's interfaces -------------------------===//

#include "ir/FuseDialect.h"

#include "ir/FuseInterfaces.cpp.inc"
