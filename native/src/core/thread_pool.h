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

int thread_count();
// n <= 0 means "one per hardware core".
void set_thread_count(int n);

}  // namespace ninodes
