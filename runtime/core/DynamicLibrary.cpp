#include "runtime/core/DynamicLibrary.h"

#include <dlfcn.h>

namespace fusec::dynlib {

void *openFirst(const std::vector<std::string> &names, std::string &tried) {
  for (const std::string &name : names) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    tried += "\n  " + name + ": " + dlerror();
  }
  return nullptr;
}

void *findSymbol(void *library, const char *name, bool versioned) {
  void *symbol = nullptr;
  if (versioned)
    symbol = dlsym(library, (std::string(name) + "_v2").c_str());
  if (!symbol)
    symbol = dlsym(library, name);
  return symbol;
}

} // namespace fusec::dynlib
