// rill::list_devices: what `rill info` shows, without creating a logical device.
#include "rill/device.hpp"
#include "vk/device_select.hpp"
#include "vk/instance.hpp"

namespace rill {

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kDiscreteGpu: return "discrete GPU";
    case DeviceType::kIntegratedGpu: return "integrated GPU";
    case DeviceType::kVirtualGpu: return "virtual GPU";
    case DeviceType::kCpu: return "CPU";
    case DeviceType::kOther: return "other";
  }
  return "?";
}

Result<DeviceListing> list_devices(const DeviceSelector& selector) {
  RILL_ASSIGN_OR_RETURN(auto instance, vk::Instance::create({}));
  const vk::InstanceFunctionsLock functions(instance->handle());
  RILL_ASSIGN_OR_RETURN(auto devices, vk::enumerate_physical_devices(instance->handle(), instance->api_version()));
  DeviceListing listing;
  for (auto& d : devices) listing.devices.push_back(d.info);
  auto chosen = vk::choose_device(devices, selector, listing.reason);
  if (chosen.is_ok()) {
    listing.chosen = chosen.value();
  } else {
    listing.reason = chosen.status().message();
  }
  return listing;
}

}  // namespace rill
