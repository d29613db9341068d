#version 450
// Element-wise ops over n outputs, b and c repeating with periods nb and nc (a trailing broadcast):
// 0 silu(a), 1 gelu_tanh(a), 2 a + b, 3 a · b, 4 a + b · c (gated residual, addcmul), 5 a · (1 + c) + b
// (modulate: b shift, c scale), 6 a · s, 7 swiglu: rows of a are [gate | up] of nb each,
// y = silu(gate) · up.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer C { float c[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; uint op; uint nb; uint nc; float s; } p;

void main() {
  uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    if (p.op == 7u) {
      uint at = (i / p.nb) * 2u * p.nb + i % p.nb;
      float g = a[at];
      y[i] = g / (1.0 + exp(-g)) * a[at + p.nb];
      continue;
    }
    float v = a[i];
    if (p.op == 6u) {
      v = v * p.s;
    } else if (p.op == 0u) {
      v = v / (1.0 + exp(-v));
    } else if (p.op == 1u) {
      float u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      v = v / (1.0 + exp(-2.0 * u));
    } else if (p.op == 2u) {
      v = v + b[i % p.nb];
    } else if (p.op == 3u) {
      v = v * b[i % p.nb];
    } else if (p.op == 4u) {
      v = v + b[i % p.nb] * c[i % p.nc];
    } else {
      v = v * (1.0 + c[i % p.nc]) + b[i % p.nb];
    }
    y[i] = v;
  }
}
