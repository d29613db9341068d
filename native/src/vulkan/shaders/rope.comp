#version 450
// Split-half RoPE on x [S, H, D] (rows of D): pair (i, i + R/2) of each head rotates by the angle
// whose cos / sin the host computed once ([S, R/2] each, rounded from double as the CPU does);
// dims >= R copy. One invocation per (s, h, i < D - R/2).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer CS { float cs[]; };
layout(std430, binding = 2) readonly buffer SN { float sn[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint S; uint H; uint D; uint R; } p;

void main() {
  uint half_ = p.R / 2u;
  uint per_row = p.D - half_;
  uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * 65535u * 64u;
  if (id >= p.S * p.H * per_row) return;
  uint row = id / per_row, i = id % per_row;
  uint s = row / p.H;
  uint base = row * p.D;
  if (i < half_) {
    float x1 = x[base + i], x2 = x[base + i + half_];
    float c = cs[s * half_ + i], sn_ = sn[s * half_ + i];
    precise float a1 = x1 * c, b1 = -x2 * sn_, a2 = x2 * c, b2 = x1 * sn_;
    y[base + i] = a1 + b1;
    y[base + i + half_] = a2 + b2;
  } else {
    uint d = i + half_;  // i in [R/2, D - R/2) -> dims R .. D-1
    y[base + d] = x[base + d];
  }
}
