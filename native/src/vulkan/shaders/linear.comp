#version 450
// y[M,N] = x[M,K] · W[N,K]ᵀ (+ bias), f32 accumulation, 64×64 output tiles through shared memory.
// The weight format is chosen at build time (variants.txt): f32, bf16, fp8 (per-tensor scale),
// GGUF Q8_0 (34-byte blocks of 32 along K) or Q4_K (144-byte super-blocks of 256), dequantized as
// the tile loads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
#if defined(W_F32)
layout(std430, binding = 1) readonly buffer W { float w[]; };
#else
layout(std430, binding = 1) readonly buffer W { uint w[]; };
#endif
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint M; uint N; uint K; uint flags; float wscale; } p;

// 64×64 output tiles, 4×4 outputs per invocation: a barrier per 16 values of K amortized over
// 64·64·16 multiply-adds (barriers are what a CPU implementation such as lavapipe pays most for).
const uint TILE = 64u;
const uint TK = 16u;
shared float xs[TK][TILE + 1u];
shared float ws[TK][TILE + 1u];

float weight(uint n, uint k) {
#if defined(W_F32)
  return w[n * p.K + k];
#elif defined(W_BF16)
  uint i = n * p.K + k;
  return bf16_to_f32((w[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu);
#elif defined(W_E4M3)
  uint i = n * p.K + k;
  return e4m3_to_f32(byte_at(w[i >> 2], i)) * p.wscale;
#elif defined(W_E5M2)
  uint i = n * p.K + k;
  return e5m2_to_f32(byte_at(w[i >> 2], i)) * p.wscale;
#elif defined(W_Q8_0)
  uint block = n * (p.K / 32u) + k / 32u;
  uint at = block * 34u;
  uint d = byte_at(w[at >> 2], at) | (byte_at(w[(at + 1u) >> 2], at + 1u) << 8);
  uint qi = at + 2u + (k & 31u);
  return f16_to_f32(d) * float(sbyte(byte_at(w[qi >> 2], qi)));
#elif defined(W_Q4_K)
  // block_q4_K (144 bytes per 256 values): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for
  // 8 sub-blocks of 32, then 128 bytes of nibbles (each 32-byte run: low nibbles sub-block 2c,
  // high nibbles 2c + 1). value = (d·scale)·q - dmin·min, ggml's order.
  uint at = (n * (p.K / 256u) + k / 256u) * 144u;
  uint e = k & 255u;
  float d = f16_to_f32(byte_at(w[at >> 2], at) | (byte_at(w[(at + 1u) >> 2], at + 1u) << 8));
  float dmin = f16_to_f32(byte_at(w[(at + 2u) >> 2], at + 2u) | (byte_at(w[(at + 3u) >> 2], at + 3u) << 8));
  uint c = e / 64u, within = e % 64u;
  uint sb = 2u * c + (within >= 32u ? 1u : 0u);
  uint sc_at = at + 4u;
  uint sc, mn;
  if (sb < 4u) {
    sc = byte_at(w[(sc_at + sb) >> 2], sc_at + sb) & 63u;
    mn = byte_at(w[(sc_at + sb + 4u) >> 2], sc_at + sb + 4u) & 63u;
  } else {
    uint hi = byte_at(w[(sc_at + sb + 4u) >> 2], sc_at + sb + 4u);
    sc = (hi & 15u) | ((byte_at(w[(sc_at + sb - 4u) >> 2], sc_at + sb - 4u) >> 6) << 4);
    mn = (hi >> 4) | ((byte_at(w[(sc_at + sb) >> 2], sc_at + sb) >> 6) << 4);
  }
  uint qi = at + 16u + 32u * c + (within % 32u);
  uint byte_ = byte_at(w[qi >> 2], qi);
  float q = float(within < 32u ? (byte_ & 15u) : (byte_ >> 4));
  precise float d1 = d * float(sc);
  precise float m1 = dmin * float(mn);
  precise float v = d1 * q - m1;
  return v;
#endif
}

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint tid = ly * 16u + lx;
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uint idx = tid + i * 256u;
      uint r = idx / TK, kk = idx % TK;
      uint k = k0 + kk;
      xs[kk][r] = (row0 + r < p.M && k < p.K) ? x[(row0 + r) * p.K + k] : 0.0;
      ws[kk][r] = (col0 + r < p.N && k < p.K) ? weight(col0 + r, k) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < TK; ++kk) {
      float a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = xs[kk][ly * 4u + i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = ws[kk][lx * 4u + j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint m = row0 + ly * 4u + i;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      uint n = col0 + lx * 4u + j;
      if (m < p.M && n < p.N) y[m * p.N + n] = acc[i][j] + ((p.flags & 1u) != 0u ? bias[n] : 0.0);
    }
  }
}
