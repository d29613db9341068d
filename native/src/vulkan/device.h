#pragma once
// One logical Vulkan device: a compute queue, buffers, pipelines (through a VkPipelineCache) and a
// submit path that records a list of dispatches into one command buffer and waits for it. Every
// entry point locks the device: ops from several worker threads serialize on the queue.
#include <volk.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ninodes::vk {

class Device;

/** A storage buffer; device memory that the host maps directly where the device allows it. */
struct Buffer {
  Device* device = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t bytes = 0;
  /** Host pointer when the memory is device-local and host-visible (unified memory); else null. */
  void* mapped = nullptr;
  ~Buffer();
};

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;
};

struct Dispatch {
  std::string shader;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<uint32_t> push;
  std::array<uint32_t, 3> groups{1, 1, 1};
};

class Device {
 public:
  /** The device vk:`index`, opened on first use and kept for the life of the process. */
  static Device& open(int index);

  std::shared_ptr<Buffer> create_buffer(size_t bytes);
  void upload(Buffer& dst, size_t offset, const void* src, size_t bytes);
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);
  /** Records the dispatches in order (a barrier between each), submits once and waits. */
  void run(const std::vector<Dispatch>& list);

  int index() const { return index_; }
  size_t max_binding_bytes() const { return max_binding_; }
  bool float64() const { return float64_; }
  size_t pipeline_count();
  /** Bytes of the pipeline cache (vkGetPipelineCacheData): what a warm start would reuse. */
  size_t pipeline_cache_bytes();

  VkDevice handle() const { return device_; }

 private:
  explicit Device(int index);
  const Pipeline& pipeline(const std::string& name, uint32_t bindings, uint32_t push_bytes);
  void submit_and_wait();
  void copy(VkBuffer src, VkBuffer dst, size_t src_offset, size_t dst_offset, size_t bytes);
  Buffer& staging();

  int index_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptors_ = VK_NULL_HANDLE;
  uint32_t descriptor_capacity_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  size_t max_binding_ = 0;
  size_t max_allocation_ = 0;
  bool float64_ = false;
  std::map<std::string, Pipeline> pipelines_;
  std::unique_ptr<Buffer> staging_;
  std::mutex mutex_;

  friend struct Buffer;
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const;
  std::unique_ptr<Buffer> allocate(size_t bytes, bool host_visible_only);
};

}  // namespace ninodes::vk
