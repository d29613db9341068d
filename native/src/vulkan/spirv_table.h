#pragma once
// The SPIR-V of every compute shader, compiled by glslc at build time (cmake/vulkan.cmake) and
// embedded in the addon: the prebuilt package carries it, nothing is compiled at run time.
#include <cstddef>
#include <cstdint>

namespace ninodes::vk {

struct SpirvShader {
  const char* name;
  const uint32_t* words;
  size_t bytes;
};

extern const SpirvShader kSpirvShaders[];
extern const size_t kSpirvShaderCount;

}  // namespace ninodes::vk
