#pragma once
// What each embedded shader reads and writes: its bindings, its push constants, the bytes each
// binding must hold for those constants and the workgroups to launch. A dispatch from JS is checked
// against this table before anything is recorded, so a bad size is a coded error, never a read or
// write past a buffer on the device.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ninodes::vk {

class Device;

struct OpCheck {
  /** Bytes each binding needs (0: unused by these constants, any buffer will do). */
  std::vector<size_t> bytes;
  std::array<uint32_t, 3> groups{1, 1, 1};
};

/** Validates a dispatch of `shader` with push constants `push` on `device`; throws a coded error. */
OpCheck check_op(const Device& device, const std::string& shader, const std::vector<uint32_t>& push, size_t buffers);

}  // namespace ninodes::vk
