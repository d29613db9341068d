#version 450
// Flash-style attention, one workgroup per (query, head): keys in chunks of 64 (one per
// invocation), an online softmax (running max and sum) and the output accumulated per head dim,
// so memory is O(S·D) whatever T. q [H,S,D], k / v [H,T,D]; y [H,S,D], or [S,H·D] with flags & 1.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint H; uint S; uint T; uint D; float scale; uint flags; } p;

const uint MAX_D = 256u;
const uint PER = MAX_D / 64u;
shared float qs[MAX_D];
shared float prob[64];
shared float red[64];

void main() {
  uint s = gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  uint qbase = (h * p.S + s) * p.D;
  for (uint d = t; d < p.D; d += 64u) qs[d] = q[qbase + d];
  barrier();
  float acc[PER];
  for (uint j = 0u; j < PER; ++j) acc[j] = 0.0;
  float run_max = -1.0 / 0.0, run_sum = 0.0;
  for (uint c0 = 0u; c0 < p.T; c0 += 64u) {
    uint key = c0 + t;
    float score = -1.0 / 0.0;
    if (key < p.T) {
      uint kb = (h * p.T + key) * p.D;
      float dot_ = 0.0;
      for (uint d = 0u; d < p.D; ++d) dot_ += qs[d] * k[kb + d];
      score = dot_ * p.scale;
    }
    red[t] = score;
    barrier();
    for (uint w = 32u; w > 0u; w >>= 1) {
      if (t < w) red[t] = max(red[t], red[t + w]);
      barrier();
    }
    float new_max = max(run_max, red[0]);
    barrier();
    float e = key < p.T ? exp(score - new_max) : 0.0;
    prob[t] = e;
    red[t] = e;
    barrier();
    for (uint w = 32u; w > 0u; w >>= 1) {
      if (t < w) red[t] += red[t + w];
      barrier();
    }
    float correction = exp(run_max - new_max);
    run_sum = run_sum * correction + red[0];
    run_max = new_max;
    uint n = min(64u, p.T - c0);
    for (uint j = 0u; j < PER; ++j) {
      uint d = t + j * 64u;
      if (d < p.D) {
        float a = acc[j] * correction;
        for (uint i = 0u; i < n; ++i) a += prob[i] * v[(h * p.T + c0 + i) * p.D + d];
        acc[j] = a;
      }
    }
    barrier();
  }
  uint obase = (p.flags & 1u) != 0u ? (s * p.H + h) * p.D : qbase;
  for (uint j = 0u; j < PER; ++j) {
    uint d = t + j * 64u;
    if (d < p.D) y[obase + d] = p.T == 0u ? 0.0 : acc[j] / run_sum;
  }
}
