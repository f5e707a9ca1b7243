// Instance creation: volk loading, validation layer with synchronization validation, and the
// debug messenger that routes layer messages to the application.
#include "vk/instance.hpp"

#include <cstring>
#include <mutex>
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

  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = &Instance::on_debug_message;
  messenger_info.pUserData = inst.get();

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
  volkLoadInstanceOnly(inst->instance_);
  if (config.validation && inst->debug_utils_) {
    messenger_info.pNext = nullptr;  // it chained the validation features for vkCreateInstance
    RILL_VK_RETURN_IF_ERROR(
        vkCreateDebugUtilsMessengerEXT(inst->instance_, &messenger_info, nullptr, &inst->messenger_));
  }
  return inst;
}

Result<std::unique_ptr<Instance>> Instance::wrap(VkInstance instance, uint32_t api_version) {
  RILL_RETURN_IF_ERROR(load_vulkan());
  if (instance == VK_NULL_HANDLE) return invalid_argument("external VkInstance is null");
  std::unique_ptr<Instance> inst(new Instance());
  inst->instance_ = instance;
  inst->api_version_ = api_version != 0 ? api_version : VK_API_VERSION_1_1;
  volkLoadInstanceOnly(instance);
  return inst;
}

Instance::~Instance() {
  if (!owned_ || instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  vkDestroyInstance(instance_, nullptr);
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
