// ggufLinear: y = x · Wᵀ + bias with W in GGUF blocks, computed on the blocks (gguf_linear.h).
// Memory: the stored blocks are read in place; a worker unpacks 16 weight rows at a time into its
// own scratch (16 · K codes and 3 floats per sub-block), and the call quantizes the input into
// one process-wide activation buffer (about 2 · M · K bytes, kept between calls so a steady-state
// step touches no new pages).
#include <napi.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/gguf_linear.h"
#include "ops/int8_vnni.h"
#include "ops/span_args.h"

namespace ninodes {
namespace {

enum class GgufKernel { kVnni, kAvx2, kScalar };

GgufKernel resolve_kernel(const std::string& name) {
  const GgufKernel best = gguf_vnni_supported() ? GgufKernel::kVnni : use_avx2() ? GgufKernel::kAvx2 : GgufKernel::kScalar;
  if (name == "auto") return best;
  if (name == "scalar") return GgufKernel::kScalar;
  if (name == "avx2") {
    if (!use_avx2()) fail("BACKEND_UNAVAILABLE", "ggufLinear: the 'avx2' kernel needs AVX2 and FMA on an AVX2 SIMD path (this CPU or NINODES_SIMD rules it out)");
    return GgufKernel::kAvx2;
  }
  if (name == "vnni") {
    if (!gguf_vnni_supported()) fail("BACKEND_UNAVAILABLE", "ggufLinear: the 'vnni' kernel needs AVX512-VNNI on the AVX-512 SIMD path (this CPU or NINODES_SIMD rules it out)");
    return GgufKernel::kVnni;
  }
  fail("INVALID_ARGUMENT", "ggufLinear: unknown kernel '" + name + "' (expected auto, vnni, avx2 or scalar)");
}

// The activation buffer every call shares: calls take turns (they would queue on the pool anyway).
struct ActivationBuffer {
  std::mutex lock;
  std::vector<int8_t> q, packed;
  std::vector<float> scale, sum;
};

ActivationBuffer& activation_buffer() {
  static ActivationBuffer* buffer = new ActivationBuffer();  // never destroyed: workers may outlive exit
  return *buffer;
}

struct Call {
  GgufLinearType type;
  GgufKernel kernel;
  const float* x;
  const uint8_t* w;
  const float* bias;
  float* y;
  size_t m, k, n;
};

void run(const Call& c) {
  if (c.m == 0 || c.n == 0) return;
  const GgufLinearLayout layout = gguf_linear_layout(c.type);
  ActivationBuffer& buffer = activation_buffer();
  std::lock_guard<std::mutex> hold(buffer.lock);
  const size_t blocks = gguf_row_blocks(c.m), padded = blocks * kGgufRowBlock;
  buffer.q.resize(std::max(buffer.q.size(), padded * c.k));
  buffer.scale.resize(std::max(buffer.scale.size(), padded * (c.k / layout.a)));
  if (layout.mins) buffer.sum.resize(std::max(buffer.sum.size(), padded * (c.k / 32)));
  GgufActivations act;
  act.q = buffer.q.data();
  act.scale = buffer.scale.data();
  act.sum = layout.mins ? buffer.sum.data() : nullptr;
  gguf_quantize_activations(c.x, c.m, c.k, layout, act, parallel_for);
  const int8_t* packed = nullptr;
  if (c.kernel == GgufKernel::kVnni) {
    buffer.packed.resize(std::max(buffer.packed.size(), vnni_packed_bytes(c.m, c.k)));
    vnni_pack_activations(act.q, c.m, c.k, buffer.packed.data(), parallel_for);
    packed = buffer.packed.data();
  }
  GgufOutput out;
  out.y = c.y;
  out.bias = c.bias;
  out.n = c.n;
  // Threads take 16-row groups of the weight from a shared counter (a thread the OS slows does
  // fewer); each output is computed whole by one thread, so the bits never depend on the split.
  const size_t groups = (c.n + kGgufGroupRows - 1) / kGgufGroupRows;
  const size_t workers = std::min(groups, static_cast<size_t>(std::max(1, thread_count())));
  std::atomic<size_t> next{0};
  parallel_for(workers, 1, [&](size_t, size_t) {
    thread_local std::vector<int8_t> q;
    thread_local std::vector<float> scale, min;
    thread_local std::vector<int32_t> comp;
    const size_t subs = kGgufGroupRows * (c.k / layout.g);
    q.resize(kGgufGroupRows * c.k);
    scale.resize(subs);
    comp.resize(subs);
    if (layout.mins) min.resize(subs);
    GgufRows rows;
    rows.q = q.data();
    rows.scale = scale.data();
    rows.comp = comp.data();
    rows.min = layout.mins ? min.data() : nullptr;
    for (size_t g = next.fetch_add(1); g < groups; g = next.fetch_add(1)) {
      const size_t n0 = g * kGgufGroupRows, nv = std::min(kGgufGroupRows, c.n - n0);
      gguf_unpack_rows(c.type, c.w, n0, nv, kGgufGroupRows, c.k, rows);
      if (c.kernel == GgufKernel::kVnni) {
        gguf_vnni_group(packed, act, c.m, c.k, layout, rows, n0, nv, out);
      } else {
        gguf_portable_group(act, c.m, c.k, layout, rows, n0, nv, out, c.kernel == GgufKernel::kAvx2);
      }
    }
  });
}

// ggufLinear(dtype, x f32 [M,K], w blocks [N, K/blockElems], bias f32 [N] | null, y f32 [M,N], M, K, N, kernel) -> Promise
Napi::Value gguf_linear(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Call c{};
    const std::string dtype = args::string(info, 0, "ggufLinear dtype");
    if (!gguf_linear_type(dtype, &c.type)) {
      fail("DTYPE_MISMATCH", "ggufLinear: no integer kernel for '" + dtype + "' (q8_0, q4_0, q4_k, q5_k and q6_k have one)");
    }
    const GgufLinearLayout layout = gguf_linear_layout(c.type);
    const args::Bytes xb = args::bytes(info, 1, "ggufLinear input");
    const args::Bytes wb = args::bytes(info, 2, "ggufLinear weight");
    const args::Bytes bb = args::bytes(info, 3, "ggufLinear bias", true);
    const args::Bytes yb = args::bytes(info, 4, "ggufLinear output");
    c.m = args::dim(info, 5, "ggufLinear M");
    c.k = args::dim(info, 6, "ggufLinear K");
    c.n = args::dim(info, 7, "ggufLinear N");
    if (c.k == 0 || c.k % layout.block_elems != 0) {
      fail("INVALID_SHAPE", "ggufLinear: K = " + std::to_string(c.k) + " is not a positive multiple of " + dtype + "'s " +
                                std::to_string(layout.block_elems) + "-value blocks");
    }
    c.kernel = resolve_kernel(args::string(info, 8, "ggufLinear kernel"));
    c.x = args::as<float>(xb, args::mul(c.m, c.k, "ggufLinear input"), "ggufLinear input");
    c.w = args::as<uint8_t>(wb, args::mul(c.n, c.k / layout.block_elems * layout.block_bytes, "ggufLinear weight"), "ggufLinear weight");
    c.bias = bb.present ? args::as<float>(bb, c.n, "ggufLinear bias") : nullptr;
    c.y = args::as<float>(yb, args::mul(c.m, c.n, "ggufLinear output"), "ggufLinear output");
    std::vector<Napi::Value> keep{info[1], info[2], info[4]};
    if (bb.present) keep.push_back(info[3]);
    return AsyncOp::start(info.Env(), "ninodes.ggufLinear", [c] { run(c); }, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

Napi::Value gguf_linear_kernel(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const GgufKernel k = resolve_kernel("auto");
    return Napi::String::New(info.Env(), k == GgufKernel::kVnni ? "vnni" : k == GgufKernel::kAvx2 ? "avx2" : "scalar");
  });
}

}  // namespace
}  // namespace ninodes

NINODES_MODULE(gguf_linear) {
  exports.Set("ggufLinear", Napi::Function::New(env, ninodes::gguf_linear, "ggufLinear"));
  exports.Set("ggufLinearKernel", Napi::Function::New(env, ninodes::gguf_linear_kernel, "ggufLinearKernel"));
}
