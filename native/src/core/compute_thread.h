#pragma once
// The process's one compute thread. Async compute ops run their work here rather than on whichever
// libuv worker picked them up: libgomp keeps one OpenMP team per calling (master) thread, so work
// spread over the four libuv workers meant four teams whose idle threads spin on the cores the
// active team needs. Measured on a 2-core EPYC, h3-tiny at 64 tokens: one team halves an int8 step.
#include <functional>

namespace ninodes {

// Runs `work` on the compute thread and returns when it is done (rethrowing what it threw). Called
// from the compute thread itself, runs inline. Works queue in call order.
void run_on_compute_thread(const std::function<void()>& work);

// Whether the calling thread is the compute thread.
bool is_compute_thread();

}  // namespace ninodes
