// The evaluation baselines' cache (see baseline_cache.hpp).
#include "icl/baseline_cache.hpp"

namespace rill::icl::detail {

// A field added to either struct may change the draw or the baselines: it must be compared here.
static_assert(sizeof(TaskConfig) == 32 + sizeof(std::vector<float>),
              "compare TaskConfig's new field in same_baselines");
static_assert(sizeof(EvalOptions) == 56, "compare EvalOptions' new field in same_baselines");

bool same_baselines(const BaselineKey& a, const BaselineKey& b) {
  const TaskConfig &s = a.task, &t = b.task;
  const EvalOptions &o = a.options, &p = b.options;
  return s.d == t.d && s.n == t.n && s.data == t.data && s.gamma_shape == t.gamma_shape &&
         s.gamma_scale == t.gamma_scale && s.noise == t.noise && s.sigma_max == t.sigma_max &&
         s.categories == t.categories && a.convention == b.convention && o.tasks == p.tasks && o.seed == p.seed &&
         o.sigma == p.sigma && o.constant_lambda == p.constant_lambda && o.tune_tunedrr == p.tune_tunedrr &&
         o.tuning_tasks == p.tuning_tasks && o.tunedrr_factor == p.tunedrr_factor && o.tunedrr_cap == p.tunedrr_cap;
}

const EvalReport* BaselineCache::find(const BaselineKey& key) const {
  for (const auto& [k, report] : entries_)
    if (same_baselines(k, key)) return &report;
  return nullptr;
}

void BaselineCache::store(const BaselineKey& key, const EvalReport& report) {
  if (entries_.size() == kEntries) entries_.erase(entries_.begin());
  entries_.emplace_back(key, report);
}

}  // namespace rill::icl::detail
