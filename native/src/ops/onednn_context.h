#pragma once
// One oneDNN CPU engine for the process, and the OpenMP thread count oneDNN uses kept equal to the
// native pool's. OpenMP's thread count is per calling thread, so every oneDNN call site (libuv
// workers included) calls sync_onednn_threads() first.
#include <dnnl.hpp>

namespace ninodes {

dnnl::engine& onednn_engine();
// Sets this thread's OpenMP thread count to the native pool's size.
void sync_onednn_threads();
// True when oneDNN's int8 path on this CPU is exact (VNNI or AMX; plain AVX2 can saturate int16).
bool onednn_int8_exact();

}  // namespace ninodes
