#version 450
// Online convrot of activations: each invocation rotates one group of 256 of one row with the
// regular Hadamard transform (radix-4 stages s = 1, 4, 16, 64; S = (a+b)+(c+d), outputs S-2d,
// S-2c, S-2b, S-2a; then × 1/16), in the CPU's operation order, and writes the group's absmax.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer R { float r[]; };
layout(std430, binding = 2) writeonly buffer A { float amax[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } p;

void main() {
  uint groups = p.cols / 256u;
  uint id = gl_GlobalInvocationID.x;
  if (id >= p.rows * groups) return;
  uint base = (id / groups) * p.cols + (id % groups) * 256u;
  float v[256];
  for (uint i = 0u; i < 256u; ++i) v[i] = x[base + i];
  for (uint s = 1u; s < 256u; s *= 4u) {
    for (uint b = 0u; b < 256u; b += 4u * s) {
      for (uint j = b; j < b + s; ++j) {
        precise float a = v[j], bb = v[j + s], c = v[j + 2u * s], d = v[j + 3u * s];
        precise float S = (a + bb) + (c + d);
        v[j] = S - (d + d);
        v[j + s] = S - (c + c);
        v[j + 2u * s] = S - (bb + bb);
        v[j + 3u * s] = S - (a + a);
      }
    }
  }
  float m = 0.0;
  for (uint i = 0u; i < 256u; ++i) {
    precise float t = v[i] * 0.0625;
    r[base + i] = t;
    // NaN never compares greater: ignored, as on the CPU.
    if (abs(t) > m) m = abs(t);
  }
  amax[id] = m;
}
