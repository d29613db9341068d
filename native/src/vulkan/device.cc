#include "vulkan/device.h"

#include <algorithm>
#include <cstring>

#include "core/errors.h"
#include "vulkan/instance.h"
#include "vulkan/spirv_table.h"

namespace ninodes::vk {
namespace {

constexpr size_t kStagingBytes = size_t{32} << 20;
// Buffers are rounded to whole 32-bit words: shaders read bf16 / fp8 / int8 data as uint words.
constexpr size_t kWord = 4;

const SpirvShader& spirv(const std::string& name) {
  for (size_t i = 0; i < kSpirvShaderCount; ++i) {
    if (name == kSpirvShaders[i].name) return kSpirvShaders[i];
  }
  fail("INTERNAL", "no embedded SPIR-V named '" + name + "'");
}

}  // namespace

Buffer::~Buffer() {
  if (device == nullptr) return;
  VkDevice d = device->handle();
  if (mapped != nullptr) vkUnmapMemory(d, memory);
  if (buffer != VK_NULL_HANDLE) vkDestroyBuffer(d, buffer, nullptr);
  if (memory != VK_NULL_HANDLE) vkFreeMemory(d, memory, nullptr);
}

Device& Device::open(int index) {
  static std::mutex mutex;
  static std::map<int, Device*> devices;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices.find(index);
  if (it != devices.end()) return *it->second;
  // Never destroyed: buffers held by JS objects may outlive any point where we could.
  Device* d = new Device(index);
  devices[index] = d;
  return *d;
}

Device::Device(int index) : index_(index) {
  physical_ = physical_device(index);
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &n, families.data());
  bool found = false;
  for (uint32_t i = 0; i < n && !found; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) {
      family_ = i;
      found = true;
    }
  }
  if (!found) fail("VULKAN_UNAVAILABLE", "Vulkan device vk:" + std::to_string(index) + " has no compute queue");

  VkPhysicalDeviceVulkan12Features want12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features want11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  want12.pNext = &want11;
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &want12;
  vkGetPhysicalDeviceFeatures2(physical_, &have);
  // The shaders read 8- and 16-bit data as 32-bit words, so no storage feature is required; the
  // ones present are enabled for the fast paths that use them.
  VkPhysicalDeviceVulkan12Features on12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  on12.storageBuffer8BitAccess = want12.storageBuffer8BitAccess;
  on12.shaderInt8 = want12.shaderInt8;
  VkPhysicalDeviceFeatures2 on{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  on.pNext = &on12;
  // int8 activation quantization divides in double (a correctly rounded quotient, as on the CPU).
  on.features.shaderFloat64 = have.features.shaderFloat64;
  float64_ = have.features.shaderFloat64 == VK_TRUE;

  const float priority = 1.f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &on;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, family_, 0, &queue_);

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = family_;
  check(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &alloc, &cmd_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(device_, &fence, nullptr, &fence_), "vkCreateFence");
  VkPipelineCacheCreateInfo cache{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  check(vkCreatePipelineCache(device_, &cache, nullptr, &cache_), "vkCreatePipelineCache");

  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &m3;
  vkGetPhysicalDeviceProperties2(physical_, &props);
  max_binding_ = props.properties.limits.maxStorageBufferRange;
  max_allocation_ = static_cast<size_t>(m3.maxMemoryAllocationSize);
}

uint32_t Device::memory_type(uint32_t allowed, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if ((allowed & (1u << i)) != 0 && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  return UINT32_MAX;
}

std::unique_ptr<Buffer> Device::allocate(size_t bytes, bool host_visible_only) {
  const size_t rounded = std::max<size_t>(kWord, (bytes + kWord - 1) / kWord * kWord);
  if (rounded > max_allocation_) {
    fail("VULKAN_OUT_OF_MEMORY", "a buffer of " + std::to_string(bytes) + " bytes exceeds vk:" + std::to_string(index_) +
                                     "'s largest allocation (" + std::to_string(max_allocation_) + " bytes)");
  }
  auto out = std::make_unique<Buffer>();
  out->device = this;
  out->bytes = bytes;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = rounded;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &info, nullptr, &out->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, out->buffer, &req);
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = UINT32_MAX;
  bool map = false;
  if (host_visible_only) {
    type = memory_type(req.memoryTypeBits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, host);
    map = true;
  } else {
    // Device-local memory the host can map (unified memory, resizable BAR) needs no staging copy.
    type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host);
    map = type != UINT32_MAX;
    if (type == UINT32_MAX) type = memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  }
  if (type == UINT32_MAX) fail("VULKAN_ERROR", "vk:" + std::to_string(index_) + " offers no suitable memory type for a storage buffer");
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  const VkResult r = vkAllocateMemory(device_, &alloc, nullptr, &out->memory);
  if (r != VK_SUCCESS) {
    out->memory = VK_NULL_HANDLE;
    check(r, ("vkAllocateMemory(" + std::to_string(bytes) + " bytes)").c_str());
  }
  check(vkBindBufferMemory(device_, out->buffer, out->memory, 0), "vkBindBufferMemory");
  if (map) check(vkMapMemory(device_, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped), "vkMapMemory");
  return out;
}

std::shared_ptr<Buffer> Device::create_buffer(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::shared_ptr<Buffer>(allocate(bytes, false).release());
}

Buffer& Device::staging() {
  if (!staging_) staging_ = allocate(kStagingBytes, true);
  return *staging_;
}

void Device::submit_and_wait() {
  check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd_;
  check(vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
  check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  check(vkResetFences(device_, 1, &fence_), "vkResetFences");
}

void Device::copy(VkBuffer src, VkBuffer dst, size_t src_offset, size_t dst_offset, size_t bytes) {
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer");
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cmd_, src, dst, 1, &region);
  submit_and_wait();
}

void Device::upload(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dst.mapped != nullptr) {
    std::memcpy(static_cast<char*>(dst.mapped) + offset, src, bytes);
    return;
  }
  Buffer& stage = staging();
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    std::memcpy(stage.mapped, static_cast<const char*>(src) + done, n);
    // vkCmdCopyBuffer needs a size that is a multiple of 4 only for fills; copies take any size.
    copy(stage.buffer, dst.buffer, 0, offset + done, n);
    done += n;
  }
}

void Device::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (src.mapped != nullptr) {
    std::memcpy(dst, static_cast<const char*>(src.mapped) + offset, bytes);
    return;
  }
  Buffer& stage = staging();
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    copy(src.buffer, stage.buffer, offset + done, 0, n);
    std::memcpy(static_cast<char*>(dst) + done, stage.mapped, n);
    done += n;
  }
}

const Pipeline& Device::pipeline(const std::string& name, uint32_t bindings, uint32_t push_bytes) {
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  const SpirvShader& code = spirv(name);
  Pipeline p;
  p.bindings = bindings;
  p.push_bytes = push_bytes;
  VkShaderModuleCreateInfo module{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module.codeSize = code.bytes;
  module.pCode = code.words;
  check(vkCreateShaderModule(device_, &module, nullptr, &p.module), "vkCreateShaderModule");
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    slots[i] = VkDescriptorSetLayoutBinding{i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.bindingCount = bindings;
  set.pBindings = slots.data();
  check(vkCreateDescriptorSetLayout(device_, &set, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p.set_layout;
  layout.pushConstantRangeCount = push_bytes > 0 ? 1 : 0;
  layout.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(device_, &layout, nullptr, &p.layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = VkPipelineShaderStageCreateInfo{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = p.module;
  info.stage.pName = "main";
  info.layout = p.layout;
  check(vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, &p.pipeline), "vkCreateComputePipelines");
  return pipelines_.emplace(name, p).first->second;
}

void Device::run(const std::vector<Dispatch>& list) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t sets = static_cast<uint32_t>(list.size());
  uint32_t slots = 0;
  for (const Dispatch& d : list) slots += static_cast<uint32_t>(d.buffers.size());
  // One descriptor pool, grown to the largest submission and reset after each (the fence is waited on).
  if (descriptors_ == VK_NULL_HANDLE || sets > descriptor_capacity_ || slots > descriptor_capacity_ * 8) {
    if (descriptors_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(device_, descriptors_, nullptr);
    descriptor_capacity_ = std::max<uint32_t>({64, sets, (slots + 7) / 8});
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptor_capacity_ * 8};
    VkDescriptorPoolCreateInfo pool{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool.maxSets = descriptor_capacity_;
    pool.poolSizeCount = 1;
    pool.pPoolSizes = &size;
    check(vkCreateDescriptorPool(device_, &pool, nullptr, &descriptors_), "vkCreateDescriptorPool");
  }
  check(vkResetDescriptorPool(device_, descriptors_, 0), "vkResetDescriptorPool");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer");
  for (size_t i = 0; i < list.size(); ++i) {
    const Dispatch& d = list[i];
    const Pipeline& p = pipeline(d.shader, static_cast<uint32_t>(d.buffers.size()), static_cast<uint32_t>(d.push.size() * 4));
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = descriptors_;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &p.set_layout;
    VkDescriptorSet set;
    check(vkAllocateDescriptorSets(device_, &alloc, &set), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(d.buffers.size());
    std::vector<VkWriteDescriptorSet> writes(d.buffers.size());
    for (size_t b = 0; b < d.buffers.size(); ++b) {
      infos[b] = VkDescriptorBufferInfo{d.buffers[b]->buffer, 0, VK_WHOLE_SIZE};
      writes[b] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[b].dstSet = set;
      writes[b].dstBinding = static_cast<uint32_t>(b);
      writes[b].descriptorCount = 1;
      writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[b].pBufferInfo = &infos[b];
    }
    vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    if (i > 0) {
      // Each dispatch reads what the previous ones wrote.
      VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    }
    vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    if (!d.push.empty()) vkCmdPushConstants(cmd_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(d.push.size() * 4), d.push.data());
    vkCmdDispatch(cmd_, d.groups[0], d.groups[1], d.groups[2]);
  }
  submit_and_wait();
}

size_t Device::pipeline_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

size_t Device::pipeline_cache_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  check(vkGetPipelineCacheData(device_, cache_, &n, nullptr), "vkGetPipelineCacheData");
  return n;
}

}  // namespace ninodes::vk
