// The VkInstance rill runs on: created with optional validation (and synchronization validation),
// or wrapped from the application without taking ownership.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "rill/types.hpp"
#include "vk/vk_common.hpp"

namespace rill::vk {

// Loads the Vulkan loader through volk once per process.
Status load_vulkan();

// True for the loader's own notices (type GENERAL only, id "Loader Message"): they describe the
// machine, not rill's use of Vulkan. A machine with another architecture's Mesa installed (32-bit
// or arm64 drivers beside the native ones) reports every ICD it cannot load; those must not count
// as validation errors. They go to rill's log at info level instead.
bool is_loader_notice(VkDebugUtilsMessageTypeFlagsEXT types, const char* message_id_name);

struct InstanceConfig {
  bool validation = false;
  bool synchronization_validation = true;
  std::function<void(MessageSeverity, std::string_view)> on_message;  // validation messages
};

class Instance {
 public:
  static Result<std::unique_ptr<Instance>> create(const InstanceConfig& config);
  static Result<std::unique_ptr<Instance>> wrap(VkInstance instance, uint32_t api_version);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  bool debug_utils() const { return debug_utils_; }
  uint64_t validation_messages() const { return validation_messages_; }

 private:
  Instance() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
      VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
      const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool owned_ = false;
  bool debug_utils_ = false;
  uint32_t api_version_ = 0;
  uint64_t validation_messages_ = 0;
  std::function<void(MessageSeverity, std::string_view)> on_message_;
};

}  // namespace rill::vk
