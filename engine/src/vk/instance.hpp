// The VkInstance rill runs on: created with optional validation (and synchronization validation),
// or wrapped from the application without taking ownership.
//
// Instances rill creates are kept for the life of the process and reused by later contexts made with
// the same settings and loader environment: NVIDIA's driver has been seen to refuse every
// vkCreateInstance after about 70 create/destroy cycles in one process (VK_ERROR_INCOMPATIBLE_DRIVER,
// rill's whole suite in one process on an H100 and an H200), and is reported elsewhere to corrupt
// gl_SubgroupInvocationID after about 11 (Genesis-Embodied-AI/quadrants#465). A context still owns its
// device, and its own debug messenger on the instance; contexts alive at the same time never share
// an instance, so validation messages reach only the context whose work caused them.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "rill/types.hpp"
#include "vk/vk_common.hpp"

namespace rill::vk {

// Loads the Vulkan loader through volk once per process.
Status load_vulkan();

// volk keeps one set of instance-level function pointers per process, those of the instance it
// loaded last. Code that calls them (enumerating, describing and creating devices) holds this
// lock: it loads `instance`'s functions and keeps other threads from loading another instance's
// in the meantime (two contexts made at once on two threads raced on the pointers).
class InstanceFunctionsLock {
 public:
  explicit InstanceFunctionsLock(VkInstance instance);

 private:
  std::unique_lock<std::mutex> lock_;
};

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
  // How many VkInstances rill has created in this process (the rest of its contexts reused one).
  static uint64_t created_in_process();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  bool debug_utils() const { return debug_utils_; }
  // Debug labels around recorded work (only where debug_utils()). This instance's own commands:
  // volk's global pointers follow whichever instance was loaded last, and an application's
  // instance (wrap) may lack the extension.
  void begin_label(VkCommandBuffer cb, const VkDebugUtilsLabelEXT& label) const { begin_label_(cb, &label); }
  void end_label(VkCommandBuffer cb) const { end_label_(cb); }
  uint64_t validation_messages() const { return validation_messages_; }

 private:
  Instance() = default;
  // The messenger that routes layer messages to on_message_ (chained into vkCreateInstance too, for
  // the messages of its creation).
  VkDebugUtilsMessengerCreateInfoEXT messenger_info();
  Status create_messenger(const InstanceConfig& config);
  // Loads the debug-utils commands of instance_; debug_utils_ stays only where they all load.
  void load_debug_utils();
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
      VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
      const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool owned_ = false;    // created by rill: returned to the pool of idle instances, never destroyed
  std::string pool_key_;  // the settings and loader environment it was created with
  bool debug_utils_ = false;
  PFN_vkCreateDebugUtilsMessengerEXT create_messenger_ = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
  PFN_vkCmdBeginDebugUtilsLabelEXT begin_label_ = nullptr;
  PFN_vkCmdEndDebugUtilsLabelEXT end_label_ = nullptr;
  uint32_t api_version_ = 0;
  uint64_t validation_messages_ = 0;
  std::function<void(MessageSeverity, std::string_view)> on_message_;
};

}  // namespace rill::vk
