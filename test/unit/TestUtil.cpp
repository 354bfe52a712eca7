#include "TestUtil.h"

#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace fusec::test {

CompileOptions testOptions(bool fuse) {
  CompileOptions options;
  options.fuse = fuse;
  options.cacheDir = FUSEC_TEST_CACHE_DIR;
  return options;
}

std::string freshTempDir(const std::string &stem) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/fusec-" + stem + "-XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw Error("cannot create a temp dir from " + pattern);
  return pattern;
}

std::string describeMismatch(const Tensor &actual, const Tensor &expected,
                             const Comparison &comparison) {
  std::ostringstream os;
  os.precision(9);
  os << comparison.mismatches << " mismatches, max abs error "
     << comparison.maxAbsError << ", max rel error " << comparison.maxRelError;
  if (comparison.firstMismatch >= 0)
    os << "; first at element " << comparison.firstMismatch << ": got "
       << actual.at(comparison.firstMismatch) << ", expected "
       << expected.at(comparison.firstMismatch);
  return os.str();
}

} // namespace fusec::test
