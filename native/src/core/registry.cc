#include "core/registry.h"

#include <string>
#include <vector>

namespace ninodes {
namespace {

struct Entry {
  const char* name;
  ModuleInit init;
};

// Function-local so it exists before any static registrar in another translation unit runs.
std::vector<Entry>& entries() {
  static std::vector<Entry> list;
  return list;
}

}  // namespace

ModuleRegistrar::ModuleRegistrar(const char* name, ModuleInit init) { entries().push_back({name, init}); }

void init_all_modules(Napi::Env env, Napi::Object exports) {
  Napi::Array names = Napi::Array::New(env);
  uint32_t i = 0;
  for (const Entry& entry : entries()) {
    entry.init(env, exports);
    names.Set(i++, Napi::String::New(env, entry.name));
  }
  exports.Set("modules", names);
}

}  // namespace ninodes
