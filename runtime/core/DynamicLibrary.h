//===- DynamicLibrary.h - Libraries loaded on first use --------*- C++ -*-===//
//
// The CUDA driver, NVRTC, cuBLASLt and OpenBLAS are never linked at build
// time: each is dlopen'ed the first time it is needed and its entry points
// resolved by name, so one binary runs everywhere and says why a library is
// unavailable only when something needs it.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CORE_DYNAMICLIBRARY_H
#define FUSEC_RUNTIME_CORE_DYNAMICLIBRARY_H

#include "runtime/core/Error.h"

#include <string>
#include <vector>

namespace fusec::dynlib {

/// dlopen's the first of `names` that loads; appends each failure to `tried`
/// ("\n  NAME: dlerror"). Returns null when none loads.
void *openFirst(const std::vector<std::string> &names, std::string &tried);

/// The address of `name` in `library`, preferring its versioned `name_v2`
/// form when `versioned`; null when absent.
void *findSymbol(void *library, const char *name, bool versioned);

/// Resolves `name` into `slot`; a missing entry point is added to `missing`
/// (a comma-separated list).
template <typename Fn>
bool resolve(void *library, Fn &slot, const char *name, bool versioned,
             std::string &missing) {
  void *symbol = findSymbol(library, name, versioned);
  if (!symbol)
    missing += std::string(missing.empty() ? "" : ", ") + name;
  slot = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

/// A dlopen'ed library's entry points, or why they could not be had.
template <typename Api> struct LoadedLibrary {
  Api api{};
  std::string error;

  /// The entry points, or throws fusec::Error(`context` + why not).
  const Api &get(const std::string &context) const {
    if (!error.empty())
      throw Error(context + error);
    return api;
  }
};

/// Opens the first of `names` and lets `resolveAll(library, api, missing)`
/// resolve every entry point; the error names the library (`what`) and any
/// missing entry point.
template <typename Api, typename ResolveAll>
LoadedLibrary<Api>
loadLibrary(const std::vector<std::string> &names, const std::string &what,
            const std::string &installHint, ResolveAll resolveAll) {
  LoadedLibrary<Api> loaded;
  std::string tried;
  void *library = openFirst(names, tried);
  if (!library) {
    loaded.error = what + " is not installed" + installHint + tried;
    return loaded;
  }
  std::string missing;
  resolveAll(library, loaded.api, missing);
  if (!missing.empty())
    loaded.error = what + " lacks entry points: " + missing;
  return loaded;
}

} // namespace fusec::dynlib

#endif
