#version 450
// Row ops over the last dim, one workgroup per row. flags & 12 picks the op:
//   0  RMSNorm: x / sqrt(mean(x²) + eps), · weight (flags & 1), then · (1 + scale) + shift (flags & 2)
//   4  LayerNorm, two-pass (biased variance): (x - mean) / sqrt(var + eps), · weight (1), + bias (2: `shift`)
//   8  softmax: exp(x - max) / Σ
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) readonly buffer SH { float shift[]; };
layout(std430, binding = 3) readonly buffer SC { float scale[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint dim; uint flags; float eps; } p;

shared float partial[128];

// Σ (or max) of every invocation's `v` over the workgroup.
float reduce(float v, bool take_max) {
  uint t = gl_LocalInvocationID.x;
  partial[t] = v;
  barrier();
  for (uint half_ = 64u; half_ > 0u; half_ >>= 1) {
    if (t < half_) partial[t] = take_max ? max(partial[t], partial[t + half_]) : partial[t] + partial[t + half_];
    barrier();
  }
  float total = partial[0];
  barrier();
  return total;
}

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.dim;
  uint op = p.flags & 12u;
  if (op == 8u) {
    float m = -1.0 / 0.0;
    for (uint i = t; i < p.dim; i += 128u) m = max(m, x[base + i]);
    m = reduce(m, true);
    float s = 0.0;
    for (uint i = t; i < p.dim; i += 128u) s += exp(x[base + i] - m);
    s = reduce(s, false);
    for (uint i = t; i < p.dim; i += 128u) y[base + i] = exp(x[base + i] - m) / s;
    return;
  }
  float mean = 0.0;
  if (op == 4u) {
    float s = 0.0;
    for (uint i = t; i < p.dim; i += 128u) s += x[base + i];
    mean = reduce(s, false) / float(p.dim);
  }
  float s = 0.0;
  for (uint i = t; i < p.dim; i += 128u) {
    float c = x[base + i] - mean;
    s += c * c;
  }
  float inv = 1.0 / sqrt(reduce(s, false) / float(p.dim) + p.eps);
  for (uint i = t; i < p.dim; i += 128u) {
    float v = (x[base + i] - mean) * inv;
    if ((p.flags & 1u) != 0u) v *= weight[i];
    if (op == 4u) {
      if ((p.flags & 2u) != 0u) v += shift[i];
    } else if ((p.flags & 2u) != 0u) {
      v = v * (1.0 + scale[i]) + shift[i];
    }
    y[base + i] = v;
  }
}
