// GGUF block encode (Q8_0, Q4_K) from f32: the bytes ggml's reference quantizers write
// (quantize_row_q8_0_ref, quantize_row_q4_K_ref with make_qkx2_quants in ggml-quants.c), so a file
// converted here equals one converted by llama.cpp / gguf-py byte for byte.
//
// Every formula keeps ggml's float32 operations in ggml's order. ggml builds these reference
// functions into ggml-base without -march flags, so they never use FMA; this file has no target
// attributes either (the baseline x86-64 build cannot contract `a * b + c`), and no -ffast-math
// reassociates the sums. Blocks are independent: the deterministic pool splits them over threads.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/async.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/gguf_k_scales.h"
#include "tensor/float_codecs.h"

namespace {

using ninodes::fail;
using ninodes::codec::f16_to_f32;
using ninodes::codec::f32_to_f16;
using ninodes::ops::scale_min_k4;

inline void wr16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// ggml's nearest_int: adding 1.5 * 2^23 rounds to an integer (nearest, ties to even) in the float
// addition itself; the integer is read from the mantissa bits. Kept bit for bit, also for the
// out-of-range values ggml only asserts against in debug builds.
inline int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int32_t i;
  std::memcpy(&i, &val, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// ---- Q8_0: 32 values, one f16 scale (absmax / 127), int8 rounded half away from zero -------------

void q8_0_block(const float* x, uint8_t* b) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  wr16(b, f32_to_f16(d));
  int8_t* qs = reinterpret_cast<int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

// ---- Q4_K: 256 values in 8 sub-blocks of 32, 4-bit levels with a 6-bit scale and min each --------

// ggml's make_qkx2_quants for n = 32, nmax = 15, rmin = -1, rdelta = 0.1, nstep = 20, squared
// error: the best (scale, min) of 21 candidate grids by weighted least squares. Returns the scale
// and stores -min (the offset subtracted on decode) in *the_min.
float make_qkx2_quants(const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux) {
  constexpr int n = 32;
  constexpr int nmax = 15;
  constexpr float rmin = -1.f;
  constexpr float rdelta = 0.1f;
  constexpr int nstep = 20;
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Block layout: d (f16), dmin (f16), scales[12], qs[128] (low nibbles: values 0..31 of each 64,
// high nibbles: 32..63).
void q4_k_block(const float* x, uint8_t* b) {
  uint8_t L[256];
  uint8_t Laux[32];
  float weights[32];
  float mins[8];
  float scales[8];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(xs, weights, L + 32 * j, &mins[j], Laux);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* sc = b + 4;
  std::memset(sc, 0, 12);
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int's int in a uint8_t (modulo 256) before clamping to 63.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      sc[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  const uint16_t dh = f32_to_f16(max_scale / 63.f);
  const uint16_t dminh = f32_to_f16(max_min / 63.f);
  wr16(b, dh);
  wr16(b + 2, dminh);
  // The levels are recomputed against the rounded (f16 super-scale x 6-bit) scales; a sub-block
  // whose scale rounds to 0 keeps the levels make_qkx2_quants chose.
  for (int j = 0; j < 8; ++j) {
    uint8_t s, m;
    scale_min_k4(j, sc, &s, &m);
    const float d = f16_to_f32(dh) * s;
    if (!d) continue;
    const float dm = f16_to_f32(dminh) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(15, l)));
    }
  }
  uint8_t* q = b + 16;
  for (int j = 0; j < 256; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

struct QuantType {
  const char* name;
  size_t elements;
  size_t bytes;
  void (*block)(const float*, uint8_t*);
};

const QuantType kQuantTypes[] = {{"q8_0", 32, 34, q8_0_block}, {"q4_k", 256, 144, q4_k_block}};

struct Job {
  const QuantType* type;
  const float* src;
  uint8_t* dst;
  size_t blocks;
};

constexpr size_t kGrainElements = 16384;

void run_job(const Job& job) {
  const QuantType& t = *job.type;
  const size_t n = job.blocks * t.elements;
  // A NaN or infinity has no quantized value (ggml's result would be undefined behaviour).
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(job.src[i])) {
      fail("NON_FINITE_WEIGHT", std::string("quantize to ") + t.name + ": value " + std::to_string(i) + " is " + std::to_string(job.src[i]));
    }
  }
  ninodes::parallel_for(job.blocks, std::max<size_t>(1, kGrainElements / t.elements), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) t.block(job.src + i * t.elements, job.dst + i * t.bytes);
  });
}

// Reads (dtype, src Float32Array, dst Uint8Array): src must hold whole blocks, dst exactly their bytes.
Job parse(const Napi::CallbackInfo& info) {
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsTypedArray() || !info[2].IsTypedArray()) {
    fail("INVALID_ARGUMENT", "ggufQuantize expects (dtype: string, src: Float32Array, dst: Uint8Array)");
  }
  const std::string name = info[0].As<Napi::String>();
  const QuantType* type = nullptr;
  for (const QuantType& t : kQuantTypes) {
    if (name == t.name) type = &t;
  }
  if (type == nullptr) fail("UNKNOWN_DTYPE", "ggufQuantize: cannot encode '" + name + "' (q8_0 and q4_k only)");
  Napi::TypedArray src = info[1].As<Napi::TypedArray>();
  Napi::TypedArray dst = info[2].As<Napi::TypedArray>();
  if (src.TypedArrayType() != napi_float32_array) fail("DTYPE_MISMATCH", "ggufQuantize: src must be a Float32Array");
  if (dst.TypedArrayType() != napi_uint8_array) fail("DTYPE_MISMATCH", "ggufQuantize: dst must be a Uint8Array");
  const size_t count = src.ElementLength();
  if (count % type->elements != 0) {
    fail("BLOCK_LENGTH_MISMATCH", std::string("ggufQuantize: ") + std::to_string(count) + " values is not a whole number of " + type->name +
                                      " blocks of " + std::to_string(type->elements));
  }
  const size_t blocks = count / type->elements;
  if (dst.ByteLength() != blocks * type->bytes) {
    fail("BLOCK_LENGTH_MISMATCH", std::string("ggufQuantize: ") + std::to_string(blocks) + " " + type->name + " blocks take " +
                                      std::to_string(blocks * type->bytes) + " bytes but dst has " + std::to_string(dst.ByteLength()));
  }
  auto data_of = [&](const Napi::TypedArray& a) -> void* {
    void* data = nullptr;
    if (napi_get_typedarray_info(info.Env(), a, nullptr, nullptr, &data, nullptr, nullptr) != napi_ok) {
      fail("INVALID_ARGUMENT", "ggufQuantize: cannot read a typed array's memory");
    }
    return data;
  };
  return Job{type, static_cast<const float*>(data_of(src)), static_cast<uint8_t*>(data_of(dst)), blocks};
}

Napi::Value quantize_sync(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    run_job(parse(info));
    return info.Env().Undefined();
  });
}

Napi::Value quantize_async(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Job job = parse(info);
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.ggufQuantize", [job] { run_job(job); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); },
        {info[1], info[2]});
  });
}

}  // namespace

NINODES_MODULE(gguf_quantize) {
  exports.Set("ggufQuantize", Napi::Function::New(env, quantize_sync, "ggufQuantize"));
  exports.Set("ggufQuantizeAsync", Napi::Function::New(env, quantize_async, "ggufQuantizeAsync"));
}
