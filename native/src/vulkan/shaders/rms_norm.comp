#version 450
// RMSNorm over rows (one workgroup per row): x / sqrt(mean(x²) + eps) · weight, then optionally
// modulate: · (1 + scale) + shift. flags: 1 weight, 2 modulate.
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) readonly buffer SH { float shift[]; };
layout(std430, binding = 3) readonly buffer SC { float scale[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint dim; uint flags; float eps; } p;

shared float partial[128];

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.dim;
  float s = 0.0;
  for (uint i = t; i < p.dim; i += 128u) s += x[base + i] * x[base + i];
  partial[t] = s;
  barrier();
  for (uint half_ = 64u; half_ > 0u; half_ >>= 1) {
    if (t < half_) partial[t] += partial[t + half_];
    barrier();
  }
  float inv = 1.0 / sqrt(partial[0] / float(p.dim) + p.eps);
  for (uint i = t; i < p.dim; i += 128u) {
    float v = x[base + i] * inv;
    if ((p.flags & 1u) != 0u) v *= weight[i];
    if ((p.flags & 2u) != 0u) v = v * (1.0 + scale[i]) + shift[i];
    y[base + i] = v;
  }
}
