#pragma once
// Vendor libraries (NVML, HIP) are loaded at run time so that ninodes builds without any vendor SDK
// and runs where none is installed; their absence is an answer ("not loadable: why"), not an error.
#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace ninodes {

struct DynamicLibrary {
  void* handle = nullptr;
  /** The candidate that loaded. */
  std::string name;
  /** Why none loaded: the first candidate's dlerror(). */
  std::string error;
};

/** Opens the first loadable candidate (RTLD_NOW | RTLD_LOCAL). */
inline DynamicLibrary open_first_library(std::initializer_list<const char*> candidates) {
  DynamicLibrary out;
  for (const char* candidate : candidates) {
    out.handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (out.handle != nullptr) {
      out.name = candidate;
      out.error.clear();
      return out;
    }
    if (out.error.empty()) {
      const char* err = dlerror();
      out.error = err != nullptr ? err : "unknown dlopen error";
    }
  }
  return out;
}

/** Binds a function pointer to a symbol; a missing symbol leaves it null for the caller to check. */
template <typename F>
void bind_symbol(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
}

}  // namespace ninodes
