#pragma once
// SIGBUS recovery for ninodes' own file mappings. A file truncated while mapped raises SIGBUS on
// every page past its new end, on whichever thread reads it: a kernel on a worker, a sync binding,
// or V8 reading an external ArrayBuffer on the JS thread. The handler recognizes faults inside a
// guarded mapping, maps zero pages over the rest of it (MAP_FIXED | MAP_ANONYMOUS) so the read
// completes, and marks the mapping faulted; whoever used the memory then reports FILE_TRUNCATED
// instead of a result. Faults anywhere else keep the previous handler or the default action.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ninodes {

// Guards [addr, addr + length) of a file mapping; returns its slot, or -1 when the table is full.
int guard_mapping(void* addr, size_t length, bool writable, const std::string& path);
// Stops guarding (before the mapping is unmapped).
void unguard_mapping(int slot);
// True once a fault inside the slot's mapping was repaired with zero pages.
bool mapping_faulted(int slot);

// Faults repaired so far (monotonic). A sync binding compares it before and after its body.
uint64_t repaired_fault_count();
// The files of mappings whose faults were repaired after `since` (a repaired_fault_count value),
// joined with ", "; empty when none.
std::string files_faulted_since(uint64_t since);

// The FILE_TRUNCATED message for a mapping of `path`.
std::string truncated_message(const std::string& path);

}  // namespace ninodes
