#pragma once
// Intra-op parallelism with a settable thread count. The split of [0, count) into chunks is a pure
// function of (count, grain, threads), and every chunk is computed by exactly one thread, so kernels
// that compute each output element independently give bit-identical results for any thread count.
#include <cstddef>
#include <functional>

namespace ninodes {

using RangeFn = std::function<void(size_t begin, size_t end)>;

// Runs fn over [0, count) in chunks of at least `grain` items. Nested calls run inline.
void parallel_for(size_t count, size_t grain, const RangeFn& fn);

// The OpenMP team runner (ops/onednn_context registers it when libgomp is there). On the compute
// thread, parallel_for runs its chunks on that team, the same split: one set of threads for oneDNN
// and our kernels, so the team's threads, which spin a while after each oneDNN region, pick up the
// next kernel's chunks instead of competing with a second pool for the cores.
using TeamFor = void (*)(size_t count, size_t grain, const RangeFn& fn);
void set_team_for(TeamFor team_for);

int thread_count();
// n <= 0 means "one per hardware core".
void set_thread_count(int n);

}  // namespace ninodes
