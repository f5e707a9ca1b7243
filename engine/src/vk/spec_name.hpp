// Specialization constants as the engine sets them: by a name that is checked at compile time
// against every name the kernels declare (shader_spec_names.hpp, generated from the SPIR-V), so a
// misspelt name fails the build. Which kernel declares which name, and the value's type, are
// checked when the pipeline is made (vk::PipelineManager::get), with a message naming both.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "rill/types.hpp"
#include "shader_spec_names.hpp"

namespace rill::gpu {

class SpecName {
 public:
  template <std::size_t N>
  consteval SpecName(const char (&name)[N]) : name_(name, N - 1) {  // NOLINT(google-explicit-constructor)
    bool declared = false;
    for (std::string_view known : kSpecConstantNames) declared = declared || known == name_;
    // Not a constant expression, so a name no kernel declares stops the build here.
    if (!declared) throw "no kernel declares a specialization constant of this name";
  }
  std::string_view view() const { return name_; }

 private:
  std::string_view name_;
};

inline SpecValue spec(SpecName name, uint32_t value) { return {std::string(name.view()), value}; }

}  // namespace rill::gpu
