#pragma once
// The packed sub-block scales of ggml's q4_K and q5_K blocks, shared by the decoder and the encoder.
#include <cstdint>

namespace ninodes {
namespace ops {

// The 12 scale bytes q pack eight 6-bit scales and eight 6-bit mins; sub-block j's (ggml's
// get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

}  // namespace ops
}  // namespace ninodes
