// Helpers shared by the compute shaders. 8- and 16-bit data (int8, fp8, bf16, GGUF blocks) is read
// from 32-bit words, so no device needs the 8/16-bit storage features.
#extension GL_EXT_control_flow_attributes : enable

uint byte_at(uint word, uint i) { return (word >> ((i & 3u) * 8u)) & 0xffu; }
int sbyte(uint b) { return int(b) - int((b & 0x80u) << 1); }

float bf16_to_f32(uint bits16) { return uintBitsToFloat(bits16 << 16); }
float f16_to_f32(uint bits16) { return unpackHalf2x16(bits16).x; }

// float8_e4m3fn: bias 7, no infinities, 0x7F / 0xFF NaN, subnormals 2^-6 * m/8.
float e4m3_to_f32(uint b) {
  uint e = (b >> 3) & 0xfu;
  uint m = b & 7u;
  float sign = (b & 0x80u) != 0u ? -1.0 : 1.0;
  if (e == 15u && m == 7u) return uintBitsToFloat(0x7fc00000u);
  if (e == 0u) return sign * float(m) * (1.0 / 512.0);
  return sign * uintBitsToFloat(((e + 120u) << 23) | (m << 20));
}

// float8_e5m2 is the high byte of an IEEE half.
float e5m2_to_f32(uint b) { return unpackHalf2x16(b << 8).x; }
