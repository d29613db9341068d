#version 450
// The int8 linear's integer core: acc[m,n] = Σ qx[m,k]·qw[n,k] in int32 (exact), then
// y = float(acc) · (x_scale[m] · w_scale[n]) + bias[n] with no fused multiply-add (`precise`), the
// CPU backend's epilogue bit for bit.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer QX { uint qx[]; };
layout(std430, binding = 1) readonly buffer QW { uint qw[]; };
layout(std430, binding = 2) readonly buffer XS { float xscale[]; };
layout(std430, binding = 3) readonly buffer WS { float wscale[]; };
layout(std430, binding = 4) readonly buffer B { float bias[]; };
layout(std430, binding = 5) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint M; uint N; uint K; uint flags; } p;

const uint TILE = 64u;
const uint TK = 16u;
shared int xs[TK][TILE + 1u];
shared int ws[TK][TILE + 1u];

int load(uint i, bool weight) { return sbyte(byte_at(weight ? qw[i >> 2] : qx[i >> 2], i)); }

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint tid = ly * 16u + lx;
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  int acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0;
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uint idx = tid + i * 256u;
      uint r = idx / TK, kk = idx % TK;
      uint k = k0 + kk;
      xs[kk][r] = (row0 + r < p.M && k < p.K) ? load((row0 + r) * p.K + k, false) : 0;
      ws[kk][r] = (col0 + r < p.N && k < p.K) ? load((col0 + r) * p.K + k, true) : 0;
    }
    barrier();
    for (uint kk = 0u; kk < TK; ++kk) {
      int a[4], b[4];
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
      if (m < p.M && n < p.N) {
        precise float s = xscale[m] * wscale[n];
        precise float v = float(acc[i][j]) * s;
        if ((p.flags & 1u) != 0u) v = v + bias[n];
        y[m * p.N + n] = v;
      }
    }
  }
}
