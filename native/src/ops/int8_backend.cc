#include "ops/int8_backend.h"

#include <napi.h>

#include <cstdlib>

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "ops/int8_amx.h"
#include "ops/int8_vnni.h"
#include "ops/onednn_context.h"

namespace ninodes {
namespace {

bool available(Int8Backend backend) {
  switch (backend) {
    case Int8Backend::kAmx: return amx_int8_supported();
    case Int8Backend::kVnni: return vnni_int8_supported();
    case Int8Backend::kOnednn: return onednn_int8_exact();
    case Int8Backend::kNative: return true;
  }
  return false;
}

std::string available_list() {
  std::string out;
  for (Int8Backend b : available_int8_backends()) out += (out.empty() ? "" : ", ") + std::string(int8_backend_name(b));
  return out;
}

Int8Backend parse(const std::string& name, const char* where) {
  for (Int8Backend b : {Int8Backend::kAmx, Int8Backend::kVnni, Int8Backend::kOnednn, Int8Backend::kNative}) {
    if (name != int8_backend_name(b)) continue;
    if (!available(b)) {
      fail("BACKEND_UNAVAILABLE", std::string(where) + ": int8 backend '" + name + "' cannot run on this machine (available: " + available_list() + ")");
    }
    return b;
  }
  fail("INVALID_ARGUMENT", std::string(where) + ": unknown int8 backend '" + name + "' (expected auto, amx, vnni, onednn or native)");
}

// A forced scalar SIMD path (NINODES_SIMD=scalar) also keeps the default off the AMX kernel.
Int8Backend default_backend() {
  const char* forced = std::getenv("NINODES_INT8_BACKEND");
  if (forced != nullptr && *forced != '\0' && std::string(forced) != "auto") return parse(forced, "NINODES_INT8_BACKEND");
  if (amx_int8_supported() && use_avx2()) return Int8Backend::kAmx;
  if (vnni_int8_supported()) return Int8Backend::kVnni;
  return onednn_int8_exact() ? Int8Backend::kOnednn : Int8Backend::kNative;
}

Napi::Value int8_backend(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    return Napi::String::New(info.Env(), int8_backend_name(default_backend()));
  });
}

Napi::Value int8_backends(const Napi::CallbackInfo& info) {
  const std::vector<Int8Backend> list = available_int8_backends();
  Napi::Array out = Napi::Array::New(info.Env(), list.size());
  for (size_t i = 0; i < list.size(); ++i) out.Set(static_cast<uint32_t>(i), int8_backend_name(list[i]));
  return out;
}

}  // namespace

const char* int8_backend_name(Int8Backend backend) {
  switch (backend) {
    case Int8Backend::kAmx: return "amx";
    case Int8Backend::kVnni: return "vnni";
    case Int8Backend::kOnednn: return "onednn";
    case Int8Backend::kNative: return "native";
  }
  return "native";
}

std::vector<Int8Backend> available_int8_backends() {
  std::vector<Int8Backend> out;
  for (Int8Backend b : {Int8Backend::kAmx, Int8Backend::kVnni, Int8Backend::kOnednn, Int8Backend::kNative})
    if (available(b)) out.push_back(b);
  return out;
}

Int8Backend resolve_int8_backend(const std::string& name, size_t m, size_t k) {
  const Int8Backend b = name == "auto" ? default_backend() : parse(name, "int8 backend");
  if (b == Int8Backend::kAmx && k % kAmxKStep != 0) {
    if (name == "amx") fail("BACKEND_UNAVAILABLE", "int8 backend 'amx' needs K to be a multiple of 64, got K = " + std::to_string(k));
    return vnni_int8_supported() && k % kVnniKStep == 0 ? Int8Backend::kVnni : onednn_int8_exact() ? Int8Backend::kOnednn : Int8Backend::kNative;
  }
  if (b == Int8Backend::kVnni && k % kVnniKStep != 0) {
    if (name == "vnni") fail("BACKEND_UNAVAILABLE", "int8 backend 'vnni' needs K to be a multiple of 4, got K = " + std::to_string(k));
    return onednn_int8_exact() ? Int8Backend::kOnednn : Int8Backend::kNative;
  }
  // Fewer rows than one packed block leave most VPDPBUSD lanes idle; oneDNN's kernels for a few
  // rows were up to 2x faster there (Zen 4, K = N = 3072). Same bits either way.
  if (b == Int8Backend::kVnni && name == "auto" && m < kVnniMinRows && onednn_int8_exact()) return Int8Backend::kOnednn;
  return b;
}

}  // namespace ninodes

NINODES_MODULE(int8_backend) {
  exports.Set("int8Backend", Napi::Function::New(env, ninodes::int8_backend, "int8Backend"));
  exports.Set("int8Backends", Napi::Function::New(env, ninodes::int8_backends, "int8Backends"));
}
