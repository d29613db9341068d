#include <napi.h>

#include "core/registry.h"

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  ninodes::init_all_modules(env, exports);
  return exports;
}

NODE_API_MODULE(ninodes, Init)
