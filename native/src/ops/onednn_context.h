#pragma once
// One oneDNN CPU engine for the process, and the OpenMP thread count oneDNN uses kept equal to the
// native pool's. OpenMP's thread count is per calling thread, so every oneDNN call site (libuv
// workers included) calls sync_onednn_threads() first.
#include <dnnl.hpp>

#include "core/thread_pool.h"

namespace ninodes {

dnnl::engine& onednn_engine();
// Sets this thread's OpenMP thread count to the native pool's size.
void sync_onednn_threads();
// parallel_for's split of [0, count) run on the OpenMP team oneDNN uses from this thread. Ops that
// interleave their own passes with oneDNN calls use it: after a oneDNN call that team's threads
// spin-wait for a while, and work handed to the native pool meanwhile competes with them for the
// cores. Chunks are the same as parallel_for's, so element-wise results do not depend on it.
void onednn_team_for(size_t count, size_t grain, const RangeFn& fn);
// True when oneDNN's int8 path on this CPU is exact (VNNI or AMX; plain AVX2 can saturate int16).
// Which int8 backend actually runs is ops/int8_backend.h's choice.
bool onednn_int8_exact();

}  // namespace ninodes
