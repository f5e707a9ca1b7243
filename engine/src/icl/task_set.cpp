// Task sets on disk (safetensors): the bring-your-own-data path of the ICL trainer.
#include "icl/task_set.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "core/host_memory_guard.hpp"
#include "icl/known_tensors.hpp"
#include "rill/safetensors.hpp"

namespace rill::icl {
namespace {

Status all_finite(const std::vector<float>& v, const std::string& where, const char* name) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      return invalid_argument(where + "tensor '" + name + "' holds a non-finite value at flat index " + std::to_string(i));
  return Status::ok();
}

}  // namespace

Status detail::check_task_set_contents(const TaskSet& set, const std::string& where) {
  // The limits first: the sizes below are then products of bounded numbers.
  if (set.d < 1 || set.n < 1 || set.tasks < 1)
    return invalid_argument(where + ": d, n and the task count must be >= 1, got d=" + std::to_string(set.d) +
                            ", n=" + std::to_string(set.n) + ", " + std::to_string(set.tasks) + " tasks");
  if (set.d > 1024 || set.n > 65536 || set.tasks >= (int64_t(1) << 24))
    return out_of_range(where +
                        ": the task set is larger than rill's limits (n <= 65536, d <= 1024, fewer than 2^24 "
                        "tasks), got d=" +
                        std::to_string(set.d) + ", n=" + std::to_string(set.n) + ", " + std::to_string(set.tasks) +
                        " tasks");
  const size_t token_elems = size_t(set.n + 1) * size_t(set.d + 1), tasks = size_t(set.tasks);
  if (set.tokens.size() != tasks * token_elems || set.targets.size() != tasks ||
      !(set.sigmas.empty() || set.sigmas.size() == tasks))
    return invalid_argument(where + ": the task set's arrays do not match its task count, n and d");
  for (const auto& [values, name] :
       {std::pair{&set.tokens, "tokens"}, {&set.targets, "targets"}, {&set.sigmas, "sigmas"}}) {
    const auto bad = std::find_if(values->begin(), values->end(), [](float x) { return !std::isfinite(x); });
    if (bad != values->end())
      return invalid_argument(where + ": the task set's " + name + "[" + std::to_string(bad - values->begin()) +
                              "] is not finite");
  }
  const auto negative = std::find_if(set.sigmas.begin(), set.sigmas.end(), [](float x) { return x < 0.0f; });
  if (negative != set.sigmas.end())
    return invalid_argument(where + ": the task set's sigmas[" + std::to_string(negative - set.sigmas.begin()) +
                            "] is negative");
  for (size_t t = 0; t < tasks; ++t)
    if (set.tokens[(t + 1) * token_elems - 1] != 0.0f)
      return invalid_argument(where + ": task " + std::to_string(t) +
                              "'s query token holds a label (its last element must be 0)");
  return Status::ok();
}

Result<TaskSet> load_task_set(const std::string& path) {
  return rill::detail::host_memory_guarded("icl task set load", [&]() -> Result<TaskSet> {
    RILL_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
    const std::string where = "icl task set '" + path + "': ";
    RILL_RETURN_IF_ERROR(
        detail::only_known_tensors(file, {"contexts", "labels", "queries", "query_targets", "sigmas"}, where,
                                   "a task set holds contexts, labels, queries, query_targets and optionally sigmas"));
    const SafetensorsEntry* contexts = file.find("contexts");
    if (contexts == nullptr) return invalid_argument(where + "no tensor 'contexts' [tasks, n, d]");
    if (contexts->shape.size() != 3 || contexts->shape[0] < 1 || contexts->shape[1] < 1 || contexts->shape[2] < 1)
      return invalid_argument(where + "'contexts' must be [tasks, n, d] with every dimension >= 1");
    if (contexts->shape[1] > 65536 || contexts->shape[2] > 1024 || contexts->shape[0] >= (int64_t(1) << 24))
      return out_of_range(where +
                          "'contexts' is larger than rill's limits (n <= 65536, d <= 1024, fewer than 2^24 tasks)");
    TaskSet set;
    set.tasks = contexts->shape[0];
    set.n = int(contexts->shape[1]);
    set.d = int(contexts->shape[2]);
    const int64_t t = set.tasks, n = set.n, d = set.d;
    auto read = [&](const char* name, std::vector<int64_t> shape, std::vector<float>& out) -> Status {
      auto r = file.read_floats(name, shape);
      if (!r.is_ok()) return Status(r.status().code(), where + r.status().message());
      out = std::move(r).value();
      return all_finite(out, where, name);
    };
    std::vector<float> xs, ys, queries;
    RILL_RETURN_IF_ERROR(read("contexts", {t, n, d}, xs));
    RILL_RETURN_IF_ERROR(read("labels", {t, n}, ys));
    RILL_RETURN_IF_ERROR(read("queries", {t, d}, queries));
    RILL_RETURN_IF_ERROR(read("query_targets", {t}, set.targets));
    if (file.find("sigmas") != nullptr) {
      RILL_RETURN_IF_ERROR(read("sigmas", {t}, set.sigmas));
      for (float s : set.sigmas)
        if (s < 0.0f) return invalid_argument(where + "'sigmas' must be >= 0");
    }
    const int64_t width = d + 1, per_task = (n + 1) * width;
    try {  // sized by the file: without the host memory, an error, not an abort
      set.tokens.assign(size_t(t * per_task), 0.0f);
    } catch (const std::bad_alloc&) {
      return resource_exhausted(where + "no host memory for the tokens of " + std::to_string(t) + " tasks");
    }
    for (int64_t task = 0; task < t; ++task) {
      float* tok = set.tokens.data() + task * per_task;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < d; ++k) tok[i * width + k] = xs[size_t((task * n + i) * d + k)];
        tok[i * width + d] = ys[size_t(task * n + i)];
      }
      for (int64_t k = 0; k < d; ++k) tok[n * width + k] = queries[size_t(task * d + k)];
    }
    return set;
  });
}

Status save_task_set(const std::string& path, const TaskSet& set) {
  return rill::detail::host_memory_guarded("icl task set save", [&]() -> Status {
    // What load_task_set would refuse is not written (over a good file, perhaps).
    RILL_RETURN_IF_ERROR(detail::check_task_set_contents(set, "save_task_set '" + path + "'"));
    const int64_t t = set.tasks, n = set.n, d = set.d, width = d + 1;
    std::vector<float> xs(size_t(t * n * d)), ys(size_t(t * n)), queries(size_t(t * d));
    for (int64_t task = 0; task < t; ++task) {
      const float* tok = set.tokens.data() + task * (n + 1) * width;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < d; ++k) xs[size_t((task * n + i) * d + k)] = tok[i * width + k];
        ys[size_t(task * n + i)] = tok[i * width + d];
      }
      for (int64_t k = 0; k < d; ++k) queries[size_t(task * d + k)] = tok[n * width + k];
    }
    SafetensorsWriter w;
    RILL_RETURN_IF_ERROR(w.add_floats("contexts", {t, n, d}, xs));
    RILL_RETURN_IF_ERROR(w.add_floats("labels", {t, n}, ys));
    RILL_RETURN_IF_ERROR(w.add_floats("queries", {t, d}, queries));
    RILL_RETURN_IF_ERROR(w.add_floats("query_targets", {t}, set.targets));
    if (!set.sigmas.empty()) RILL_RETURN_IF_ERROR(w.add_floats("sigmas", {t}, set.sigmas));
    return w.write(path);
  });
}

}  // namespace rill::icl
