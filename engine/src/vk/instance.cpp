// Instance creation: volk loading, validation layer with synchronization validation, and the
// debug messenger that routes layer messages to the application.
#include "vk/instance.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.hpp"

namespace rill::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_layer(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_instance_extension(const char* name, const char* layer = nullptr) {
  uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(count);
  if (vkEnumerateInstanceExtensionProperties(layer, &count, exts.data()) != VK_SUCCESS) return false;
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Idle instances, by the settings and loader environment they were created with (instance.hpp
// says why they are kept). Never destroyed: an instance may be returned by a context that a static
// object of the application destroys after this pool's own static lifetime would have ended.
struct IdleInstance {
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t api_version = 0;
  bool debug_utils = false;
};
class InstancePool {
 public:
  std::optional<IdleInstance> take(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto [begin, end] = idle_.equal_range(key);
    if (begin == end) return std::nullopt;
    const auto it = std::prev(end);  // the one given back last (equal keys keep their order)
    const IdleInstance found = it->second;
    idle_.erase(it);
    return found;
  }
  void give(const std::string& key, const IdleInstance& instance) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.emplace(key, instance);
  }

 private:
  std::mutex mutex_;
  std::multimap<std::string, IdleInstance> idle_;
};
std::atomic<uint64_t> g_created{0};

InstancePool& instance_pool() {
  static auto* pool = new InstancePool();
  return *pool;
}

// What an instance is made of besides its create info: the loader's and the layers' environment
// (which drivers and layers it loads, their settings) and the CPU driver's thread count.
std::string pool_key(const InstanceConfig& config) {
  std::string key =
      config.validation ? (config.synchronization_validation ? "validation+sync" : "validation") : "plain";
  for (const char* name :
       {"VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_LAYER_PATH", "VK_ADD_LAYER_PATH",
        "VK_IMPLICIT_LAYER_PATH", "VK_ADD_IMPLICIT_LAYER_PATH", "VK_INSTANCE_LAYERS", "VK_LOADER_DRIVERS_SELECT",
        "VK_LOADER_DRIVERS_DISABLE", "VK_LOADER_LAYERS_ENABLE", "VK_LOADER_LAYERS_DISABLE", "VK_LOADER_LAYERS_ALLOW",
        "VK_LOADER_DEBUG", "MESA_VK_DEVICE_SELECT", "LP_NUM_THREADS"}) {
    if (const char* value = std::getenv(name)) key += std::string("\n") + name + "=" + value;
  }
  return key;
}

}  // namespace

Status load_vulkan() {
  static std::once_flag once;
  static VkResult result = VK_ERROR_INITIALIZATION_FAILED;
  std::call_once(once, [] { result = volkInitialize(); });
  if (result != VK_SUCCESS)
    return unavailable("no Vulkan loader found (libvulkan.so.1); install libvulkan1 and a driver "
                       "such as mesa-vulkan-drivers");
  return Status::ok();
}

InstanceFunctionsLock::InstanceFunctionsLock(VkInstance instance) {
  static std::mutex mutex;
  lock_ = std::unique_lock(mutex);
  volkLoadInstanceOnly(instance);  // always: a new instance may have a destroyed one's handle
}

Result<std::unique_ptr<Instance>> Instance::create(const InstanceConfig& config) {
  RILL_RETURN_IF_ERROR(load_vulkan());
  const uint32_t loader_version = volkGetInstanceVersion();
  if (loader_version < VK_API_VERSION_1_1)
    return unavailable("the Vulkan loader supports only Vulkan " +
                       std::to_string(VK_API_VERSION_MAJOR(loader_version)) + "." +
                       std::to_string(VK_API_VERSION_MINOR(loader_version)) + "; rill needs 1.1");

  std::unique_ptr<Instance> inst(new Instance());
  inst->owned_ = true;
  inst->on_message_ = config.on_message;
  inst->pool_key_ = pool_key(config);
  if (const std::optional<IdleInstance> idle = instance_pool().take(inst->pool_key_)) {
    inst->instance_ = idle->instance;
    inst->api_version_ = idle->api_version;
    inst->debug_utils_ = idle->debug_utils;
    inst->load_debug_utils();
    RILL_RETURN_IF_ERROR(inst->create_messenger(config));
    return inst;
  }
  inst->api_version_ = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : loader_version;

  std::vector<const char*> layers, extensions;
  if (config.validation) {
    if (!has_layer(kValidationLayer))
      return unavailable("validation was requested but VK_LAYER_KHRONOS_validation is not "
                         "installed (Debian: vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
  }
  inst->debug_utils_ = has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                       (config.validation && has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME, kValidationLayer));
  if (inst->debug_utils_) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  // Lets the loader list portability (non-conformant) drivers such as MoltenVK.
  VkInstanceCreateFlags flags = 0;
  if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "rill";
  app.pEngineName = "rill";
  app.apiVersion = inst->api_version_;

  VkValidationFeatureEnableEXT sync_feature = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync_feature;

  VkDebugUtilsMessengerCreateInfoEXT messenger_info = inst->messenger_info();

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  // Chain: instance <- messenger (catches messages during vkCreate/DestroyInstance) <- features.
  const void** tail = &info.pNext;
  if (config.validation && inst->debug_utils_) {
    *tail = &messenger_info;
    tail = &messenger_info.pNext;
  }
  if (config.validation && config.synchronization_validation) *tail = &features;

  RILL_VK_RETURN_IF_ERROR(vkCreateInstance(&info, nullptr, &inst->instance_));
  ++g_created;
  inst->load_debug_utils();
  RILL_RETURN_IF_ERROR(inst->create_messenger(config));
  return inst;
}

uint64_t Instance::created_in_process() { return g_created.load(); }

VkDebugUtilsMessengerCreateInfoEXT Instance::messenger_info() {
  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = &Instance::on_debug_message;
  info.pUserData = this;
  return info;
}

void Instance::load_debug_utils() {
  if (!debug_utils_) return;
  auto load = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(vkGetInstanceProcAddr(instance_, name));
    return fn != nullptr;
  };
  // Every one loaded (a && would skip the rest after a miss), and all of them needed.
  const bool loaded[] = {load(create_messenger_, "vkCreateDebugUtilsMessengerEXT"),
                         load(destroy_messenger_, "vkDestroyDebugUtilsMessengerEXT"),
                         load(begin_label_, "vkCmdBeginDebugUtilsLabelEXT"),
                         load(end_label_, "vkCmdEndDebugUtilsLabelEXT")};
  debug_utils_ = std::all_of(std::begin(loaded), std::end(loaded), [](bool ok) { return ok; });
}

Status Instance::create_messenger(const InstanceConfig& config) {
  if (!config.validation || !debug_utils_) return Status::ok();
  const VkDebugUtilsMessengerCreateInfoEXT info = messenger_info();
  RILL_VK_RETURN_IF_ERROR(create_messenger_(instance_, &info, nullptr, &messenger_));
  return Status::ok();
}

Result<std::unique_ptr<Instance>> Instance::wrap(VkInstance instance, uint32_t api_version) {
  RILL_RETURN_IF_ERROR(load_vulkan());
  if (instance == VK_NULL_HANDLE) return invalid_argument("external VkInstance is null");
  std::unique_ptr<Instance> inst(new Instance());
  inst->instance_ = instance;
  inst->api_version_ = api_version != 0 ? api_version : VK_API_VERSION_1_1;
  return inst;
}

Instance::~Instance() {
  if (!owned_ || instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE) destroy_messenger_(instance_, messenger_, nullptr);
  instance_pool().give(pool_key_, {instance_, api_version_, debug_utils_});
}

bool is_loader_notice(VkDebugUtilsMessageTypeFlagsEXT types, const char* message_id_name) {
  return types == VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT && message_id_name != nullptr &&
         std::string_view(message_id_name) == "Loader Message";
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                          VkDebugUtilsMessageTypeFlagsEXT types,
                                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                          void* user) {
  auto* self = static_cast<Instance*>(user);
  if (is_loader_notice(types, data->pMessageIdName)) {
    log_message(MessageSeverity::kInfo, std::string("Vulkan loader: ") + (data->pMessage ? data->pMessage : ""));
    return VK_FALSE;
  }
  const MessageSeverity s = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
                                ? MessageSeverity::kError
                                : MessageSeverity::kWarning;
  std::string text = std::string("[validation] ") + (data->pMessageIdName ? data->pMessageIdName : "") +
                     ": " + (data->pMessage ? data->pMessage : "");
  ++self->validation_messages_;
  if (self->on_message_) {
    self->on_message_(s, text);
  } else {
    log_message(s, text);
  }
  return VK_FALSE;  // never abort the call that triggered the message
}

}  // namespace rill::vk
