// The small ICL and language models the fault drills run (test_fault_injection.cpp,
// test_host_alloc_faults.cpp): every resource kind, few calls.
#pragma once

#include "rill/icl.hpp"
#include "rill/lm.hpp"

namespace rill_test {

inline rill::icl::TrainConfig small_icl_config() {
  rill::icl::TrainConfig c = rill::icl::ahn_setting(rill::icl::AhnSetting::k1);
  c.task.d = 2;
  c.task.n = 3;
  c.model.layers = 1;
  c.batch = 16;
  return c;
}

inline rill::lm::ModelConfig small_lm_config() {
  rill::lm::ModelConfig c;
  c.width = 16;
  c.heads = 2;
  c.ffn_width = 24;
  c.layers = 2;
  c.block = 8;
  c.chunk = 4;
  return c;
}

}  // namespace rill_test
