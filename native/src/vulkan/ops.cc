#include "vulkan/ops.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "core/errors.h"
#include "vulkan/device.h"

namespace ninodes::vk {
namespace {

using Words = std::vector<uint32_t>;

struct Spec {
  size_t bindings;
  size_t push_words;
  std::function<OpCheck(const Device&, const Words&)> plan;
};

// Output rows and columns per workgroup of linear.comp and int8_matmul.comp.
constexpr uint64_t kTile = 64;

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

uint64_t product(uint64_t a, uint64_t b, const std::string& op) {
  if (a != 0 && b > UINT32_MAX / a) fail("INVALID_ARGUMENT", op + ": " + std::to_string(a) + " x " + std::to_string(b) + " elements exceed the 2^32 a shader indexes");
  return a * b;
}

// A 1-D launch of `n` invocations in workgroups of `size`, spread over y past 65535 groups.
std::array<uint32_t, 3> spread(uint64_t n, uint32_t size) {
  const uint64_t groups = std::max<uint64_t>(1, (n + size - 1) / size);
  if (groups <= 65535) return {static_cast<uint32_t>(groups), 1, 1};
  return {65535, ceil_div(groups, 65535), 1};
}

OpCheck linear(const Words& p, const std::string& op, size_t weight_bytes) {
  const uint64_t m = p[0], n = p[1], k = p[2];
  OpCheck c;
  c.bytes = {product(m, k, op) * 4, weight_bytes, (p[3] & 1u) != 0 ? n * 4 : 0, product(m, n, op) * 4};
  if (ceil_div(m, kTile) > 65535 || ceil_div(n, kTile) > 65535) fail("INVALID_ARGUMENT", op + ": M or N over 65535 tiles of 64");
  c.groups = {std::max<uint32_t>(1, ceil_div(n, kTile)), std::max<uint32_t>(1, ceil_div(m, kTile)), 1};
  return c;
}

const std::map<std::string, Spec>& specs() {
  static const std::map<std::string, Spec> table = {
      {"linear_f32", {4, 5, [](const Device&, const Words& p) { return linear(p, "linear_f32", product(p[1], p[2], "linear_f32") * 4); }}},
      {"linear_bf16", {4, 5, [](const Device&, const Words& p) { return linear(p, "linear_bf16", product(p[1], p[2], "linear_bf16") * 2); }}},
      {"linear_e4m3", {4, 5, [](const Device&, const Words& p) { return linear(p, "linear_e4m3", product(p[1], p[2], "linear_e4m3")); }}},
      {"linear_e5m2", {4, 5, [](const Device&, const Words& p) { return linear(p, "linear_e5m2", product(p[1], p[2], "linear_e5m2")); }}},
      {"linear_q8_0",
       {4, 5, [](const Device&, const Words& p) {
          if (p[2] % 32 != 0) fail("BLOCK_MISALIGNED", "linear_q8_0: K = " + std::to_string(p[2]) + " is not a multiple of 32");
          return linear(p, "linear_q8_0", product(p[1], p[2] / 32, "linear_q8_0") * 34);
        }}},
      {"linear_q4_k",
       {4, 5, [](const Device&, const Words& p) {
          if (p[2] % 256 != 0) fail("BLOCK_MISALIGNED", "linear_q4_k: K = " + std::to_string(p[2]) + " is not a multiple of 256");
          return linear(p, "linear_q4_k", product(p[1], p[2] / 256, "linear_q4_k") * 144);
        }}},
      {"int8_matmul",
       {6, 4, [](const Device&, const Words& p) {
          const uint64_t m = p[0], n = p[1], k = p[2];
          OpCheck c;
          c.bytes = {product(m, k, "int8_matmul"), product(n, k, "int8_matmul"), m * 4, n * 4, (p[3] & 1u) != 0 ? n * 4 : 0, product(m, n, "int8_matmul") * 4};
          if (ceil_div(m, kTile) > 65535 || ceil_div(n, kTile) > 65535) fail("INVALID_ARGUMENT", "int8_matmul: M or N over 65535 tiles of 64");
          c.groups = {std::max<uint32_t>(1, ceil_div(n, kTile)), std::max<uint32_t>(1, ceil_div(m, kTile)), 1};
          return c;
        }}},
      {"int8_rotate",
       {3, 2, [](const Device&, const Words& p) {
          if (p[1] % 256 != 0) fail("GROUP_MISMATCH", "int8_rotate: " + std::to_string(p[1]) + " columns are not whole groups of 256");
          const uint64_t n = product(p[0], p[1], "int8_rotate");
          OpCheck c;
          c.bytes = {n * 4, n * 4, n / 256 * 4};
          c.groups = {std::max<uint32_t>(1, ceil_div(n / 256, 64)), 1, 1};
          if (c.groups[0] > 65535) fail("INVALID_ARGUMENT", "int8_rotate: too many groups");
          return c;
        }}},
      {"int8_quantize",
       {4, 3, [](const Device& d, const Words& p) {
          if (!d.float64()) fail("BACKEND_UNAVAILABLE", "int8_quantize needs shaderFloat64, which vk:" + std::to_string(d.index()) + " lacks");
          if (p[1] % 4 != 0 || p[2] == 0) fail("INVALID_ARGUMENT", "int8_quantize: columns must be a multiple of 4 and groups positive");
          const uint64_t n = product(p[0], p[1], "int8_quantize");
          OpCheck c;
          c.bytes = {n * 4, product(p[0], p[2], "int8_quantize") * 4, n, uint64_t{p[0]} * 4};
          c.groups = {std::max<uint32_t>(1, ceil_div(n / 4, 64)), 1, 1};
          if (c.groups[0] > 65535) fail("INVALID_ARGUMENT", "int8_quantize: too many rows");
          return c;
        }}},
      {"row_ops",
       {5, 4, [](const Device&, const Words& p) {
          const uint64_t n = product(p[0], p[1], "row_ops");
          const uint32_t op = p[2] & 12u;
          if (op == 12u) fail("INVALID_ARGUMENT", "row_ops: unknown op in flags " + std::to_string(p[2]));
          // RMSNorm modulate reads shift and scale; LayerNorm's bias rides in the shift slot.
          const bool shift = op != 8u && (p[2] & 2u) != 0;
          const bool scale = op == 0u && (p[2] & 2u) != 0;
          OpCheck c;
          c.bytes = {n * 4, op != 8u && (p[2] & 1u) != 0 ? uint64_t{p[1]} * 4 : 0, shift ? uint64_t{p[1]} * 4 : 0, scale ? uint64_t{p[1]} * 4 : 0, n * 4};
          c.groups = spread(p[0], 1);
          return c;
        }}},
      {"elementwise",
       {4, 5, [](const Device&, const Words& p) {
          const uint64_t n = p[0];
          const uint32_t op = p[1];
          if (op > 7) fail("INVALID_ARGUMENT", "elementwise: unknown op " + std::to_string(op));
          const bool uses_b = op >= 2 && op <= 5, uses_c = op == 4 || op == 5;
          if ((uses_b && (p[2] == 0 || n % p[2] != 0)) || (uses_c && (p[3] == 0 || n % p[3] != 0)) || (op == 7 && (p[2] == 0 || n % p[2] != 0))) {
            fail("SHAPE_MISMATCH", "elementwise: broadcast periods " + std::to_string(p[2]) + " / " + std::to_string(p[3]) + " do not divide " + std::to_string(n));
          }
          OpCheck c;
          // swiglu reads two inputs (gate and up) per output.
          c.bytes = {(op == 7 ? 2 : 1) * n * 4, uses_b ? uint64_t{p[2]} * 4 : 0, uses_c ? uint64_t{p[3]} * 4 : 0, n * 4};
          c.groups = {std::max<uint32_t>(1, std::min<uint32_t>(ceil_div(n, 256), 4096)), 1, 1};
          return c;
        }}},
      {"rope",
       {4, 4, [](const Device&, const Words& p) {
          const uint64_t s = p[0], h = p[1], d = p[2], r = p[3];
          if (r % 2 != 0 || r > d) fail("INVALID_ARGUMENT", "rope: rotDim " + std::to_string(r) + " must be even and at most headDim " + std::to_string(d));
          const uint64_t n = product(product(s, h, "rope"), d, "rope");
          OpCheck c;
          c.bytes = {n * 4, s * (r / 2) * 4, s * (r / 2) * 4, n * 4};
          c.groups = spread(s * h * (d - r / 2), 64);
          return c;
        }}},
      {"attention",
       {4, 6, [](const Device&, const Words& p) {
          const uint64_t h = p[0], s = p[1], t = p[2], d = p[3];
          if (d > 256) fail("BACKEND_UNAVAILABLE", "attention on Vulkan takes head dims up to 256, not " + std::to_string(d));
          if (s > 65535 || h > 65535) fail("INVALID_ARGUMENT", "attention: more than 65535 queries or heads");
          OpCheck c;
          const uint64_t q = product(product(h, s, "attention"), d, "attention");
          const uint64_t kv = product(product(h, t, "attention"), d, "attention");
          c.bytes = {q * 4, kv * 4, kv * 4, q * 4};
          c.groups = {std::max<uint32_t>(1, static_cast<uint32_t>(s)), std::max<uint32_t>(1, static_cast<uint32_t>(h)), 1};
          if (s == 0 || h == 0) c.groups = {0, 0, 0};
          return c;
        }}},
  };
  return table;
}

}  // namespace

OpCheck check_op(const Device& device, const std::string& shader, const Words& push, size_t buffers) {
  auto it = specs().find(shader);
  if (it == specs().end()) fail("INVALID_ARGUMENT", "no Vulkan op named '" + shader + "'");
  const Spec& spec = it->second;
  if (buffers != spec.bindings) fail("INVALID_ARGUMENT", shader + " takes " + std::to_string(spec.bindings) + " buffers, not " + std::to_string(buffers));
  if (push.size() != spec.push_words) fail("INVALID_ARGUMENT", shader + " takes " + std::to_string(spec.push_words) + " push-constant words, not " + std::to_string(push.size()));
  return spec.plan(device, push);
}

}  // namespace ninodes::vk
