#version 450
// Per-row int8 quantization: scale = max(absmax / 127, 1e-30), q = clamp(roundEven(x / scale)).
// x / scale is divided in double and rounded once to float: Vulkan does not promise a correctly
// rounded float division, and the CPU's quotient is the correctly rounded one.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer A { float amax[]; };
layout(std430, binding = 2) buffer Q { uint q[]; };
layout(std430, binding = 3) writeonly buffer S { float scale[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint groups; } p;

void main() {
  // One invocation per 4 columns of a row: it writes one whole word of q.
  uint words = p.cols / 4u;
  uint id = gl_GlobalInvocationID.x;
  if (id >= p.rows * words) return;
  uint row = id / words;
  float m = 0.0;
  for (uint g = 0u; g < p.groups; ++g) m = max(m, amax[row * p.groups + g]);
  float s = float(double(m) / 127.0);
  s = s > 1e-30 ? s : 1e-30;
  if (id % words == 0u) scale[row] = s;
  uint word = 0u;
  for (uint i = 0u; i < 4u; ++i) {
    float t = float(double(x[id * 4u + i]) / double(s));
    t = clamp(roundEven(t), -128.0, 127.0);
    word |= (uint(int(t)) & 0xffu) << (8u * i);
  }
  q[id] = word;
}
