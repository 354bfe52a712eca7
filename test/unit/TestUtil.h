//===- TestUtil.h - Shared helpers of the unit tests -----------*- C++ -*-===//
#ifndef FUSEC_TEST_TESTUTIL_H
#define FUSEC_TEST_TESTUTIL_H

#include "compiler/Compiler.h"
#include "runtime/Compare.h"

#include <string>

namespace fusec::test {

/// Options whose kernel cache lives in the build tree.
CompileOptions testOptions(bool fuse = true);
/// A fresh, empty directory under the system temp dir.
std::string freshTempDir(const std::string &stem);
/// "max abs error 0.1 at element 3: got 1.5, expected 1.4" for messages.
std::string describeMismatch(const Tensor &actual, const Tensor &expected,
                             const Comparison &comparison);

} // namespace fusec::test

#endif
