// Reports how this binary was built and what it chose at run time, so bench reports and bug
// reports say exactly which compiler, libraries and SIMD path produced a number.
#include <dnnl.h>

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"

#ifndef NINODES_GLOO_VERSION
#define NINODES_GLOO_VERSION "unknown"
#endif

namespace {

Napi::Value build_info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
#if defined(__clang__)
  out.Set("compiler", Napi::String::New(env, std::string("clang ") + __clang_version__));
#elif defined(__GNUC__)
  out.Set("compiler", Napi::String::New(env, std::string("gcc ") + __VERSION__));
#else
  out.Set("compiler", Napi::String::New(env, "unknown"));
#endif
  const dnnl_version_t* v = dnnl_version();
  out.Set("onednn", Napi::String::New(env, std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                               std::to_string(v->patch)));
  out.Set("onednnCpuRuntime", Napi::Number::New(env, v->cpu_runtime));
  out.Set("gloo", Napi::String::New(env, NINODES_GLOO_VERSION));
  out.Set("simd", Napi::String::New(env, ninodes::simd_path_name(ninodes::simd_path())));
  out.Set("bf16Units", Napi::Boolean::New(env, ninodes::cpu_has_bf16_units()));
  out.Set("threads", Napi::Number::New(env, ninodes::thread_count()));
  out.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
#ifdef NDEBUG
  out.Set("buildType", Napi::String::New(env, "Release"));
#else
  out.Set("buildType", Napi::String::New(env, "Debug"));
#endif
  return out;
}

Napi::Value set_simd(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString()) ninodes::fail("INVALID_ARGUMENT", "setSimd expects 'scalar', 'avx2' or 'avx512'");
    const std::string name = info[0].As<Napi::String>();
    if (!ninodes::set_simd_path(name)) {
      ninodes::fail("SIMD_UNAVAILABLE", "SIMD path '" + name + "' is not available here; valid names are 'scalar', 'avx2' (needs AVX2, FMA and F16C) and 'avx512' (also AVX-512 F, BW, DQ, VL)");
    }
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(build_info) {
  exports.Set("buildInfo", Napi::Function::New(env, build_info, "buildInfo"));
  exports.Set("setSimd", Napi::Function::New(env, set_simd, "setSimd"));
}
