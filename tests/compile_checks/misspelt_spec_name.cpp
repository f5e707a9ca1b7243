// Must not compile: a specialization constant name that no kernel declares stops the build
// (engine/src/vk/spec_name.hpp). Built only by the test misspelt_spec_name_fails_build.
#include "vk/spec_name.hpp"

const rill::SpecValue kMisspelt = rill::gpu::spec("WG_SIZ", 64);
