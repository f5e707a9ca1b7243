// The ridge baselines of evaluations already scored, kept so that evaluating again on the same
// tasks runs only the model. An evaluation's tasks are a fixed draw (the task distribution, the
// evaluation's seed, noise and size), so its baselines never change while the model trains: in a
// run that evaluates every few thousand steps they were most of each evaluation's time.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "rill/icl.hpp"

namespace rill::icl::detail {

// All a set of baseline means depends on; never the model.
struct BaselineKey {
  TaskConfig task;
  Convention convention = Convention::kAhn;  // the loss's factor
  EvalOptions options;
};
bool same_baselines(const BaselineKey& a, const BaselineKey& b);

class BaselineCache {
 public:
  // The report stored under an equal key (its `model` field is that evaluation's), or nullptr.
  const EvalReport* find(const BaselineKey& key) const;
  // Keeps the latest kEntries reports: a run's evaluations use a few option sets (a per-sigma
  // curve one per sigma).
  void store(const BaselineKey& key, const EvalReport& report);
  static constexpr size_t kEntries = 32;

 private:
  std::vector<std::pair<BaselineKey, EvalReport>> entries_;  // oldest first
};

}  // namespace rill::icl::detail
