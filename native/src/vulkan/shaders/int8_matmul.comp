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

shared int xs[16][17];
shared int ws[16][17];

int load(uint i, bool weight) { return sbyte(byte_at(weight ? qw[i >> 2] : qx[i >> 2], i)); }

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint row0 = gl_WorkGroupID.y * 16u, col0 = gl_WorkGroupID.x * 16u;
  uint m = row0 + ly, n = col0 + lx;
  int acc = 0;
  for (uint k0 = 0u; k0 < p.K; k0 += 16u) {
    uint k = k0 + lx;
    xs[ly][lx] = (m < p.M && k < p.K) ? load(m * p.K + k, false) : 0;
    ws[ly][lx] = (col0 + ly < p.N && k < p.K) ? load((col0 + ly) * p.K + k, true) : 0;
    barrier();
    [[unroll]] for (uint t = 0u; t < 16u; ++t) acc += xs[ly][t] * ws[lx][t];
    barrier();
  }
  if (m < p.M && n < p.N) {
    precise float s = xscale[m] * wscale[n];
    precise float v = float(acc) * s;
    if ((p.flags & 1u) != 0u) v = v + bias[n];
    y[m * p.N + n] = v;
  }
}
