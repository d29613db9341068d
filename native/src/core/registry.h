#pragma once
// Each source file registers the functions it exports with NINODES_MODULE, so adding an op never
// means editing a central list (and parallel work never collides on one file).
#include <napi.h>

namespace ninodes {

using ModuleInit = void (*)(Napi::Env env, Napi::Object exports);

struct ModuleRegistrar {
  ModuleRegistrar(const char* name, ModuleInit init);
};

void init_all_modules(Napi::Env env, Napi::Object exports);

}  // namespace ninodes

#define NINODES_MODULE(name)                                                     \
  static void ninodes_module_##name(Napi::Env env, Napi::Object exports);        \
  static ::ninodes::ModuleRegistrar ninodes_registrar_##name(#name, ninodes_module_##name); \
  static void ninodes_module_##name(Napi::Env env, Napi::Object exports)
