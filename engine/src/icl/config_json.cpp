#include "icl/config_json.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_keys.hpp"

namespace rill::icl::detail {

using nlohmann::json;

std::string config_to_json(const TrainConfig& c) {
  json j;
  j["task"] = {{"d", c.task.d},
               {"n", c.task.n},
               {"data", int(c.task.data)},
               {"gamma_shape", c.task.gamma_shape},
               {"gamma_scale", c.task.gamma_scale},
               {"noise", int(c.task.noise)},
               {"sigma_max", c.task.sigma_max},
               {"categories", c.task.categories}};
  j["model"] = {{"layers", c.model.layers},
                {"heads", c.model.heads},
                {"param", int(c.model.param)},
                {"convention", int(c.model.convention)},
                {"init_std", c.model.init_std}};
  j["optimizer"] = {{"kind", int(c.optimizer.kind)},  {"lr", c.optimizer.lr},       {"momentum", c.optimizer.momentum},
                    {"beta1", c.optimizer.beta1},     {"beta2", c.optimizer.beta2}, {"eps", c.optimizer.eps},
                    {"clip_norm", c.optimizer.clip_norm}};
  j["batch"] = c.batch;
  j["seed"] = c.seed;
  j["read_every"] = c.read_every;
  j["on_nonfinite"] = int(c.on_nonfinite);
  return j.dump();
}

namespace {

constexpr size_t kMaxIclConfigNesting = 8;  // a config nests 3 deep

// A JSON number as a float: one past float's range is +-inf (validate refuses it; a plain cast
// would be undefined behaviour).
float to_float(const json& e) {
  const double d = e.get<double>();
  if (std::fabs(d) > double(FLT_MAX)) return d > 0 ? INFINITY : -INFINITY;
  return float(d);
}

// Reads j[key] into out when it has the right JSON type; an error naming the key otherwise.
template <typename T>
Status read(const json& j, const char* key, T& out) {
  const auto it = j.find(key);
  if (it == j.end()) return invalid_argument(std::string("icl config JSON: missing '") + key + "'");
  bool ok = false;
  if constexpr (std::is_same_v<T, float>) ok = it->is_number();
  else if constexpr (std::is_same_v<T, uint64_t>) ok = it->is_number_unsigned();
  else if constexpr (std::is_integral_v<T>) ok = it->is_number_integer();
  else ok = it->is_array();
  if (!ok) return invalid_argument(std::string("icl config JSON: '") + key + "' has the wrong type");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint64_t>) {
    const int64_t v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) return invalid_argument(std::string("icl config JSON: '") + key + "' out of range");
  }
  if constexpr (std::is_same_v<T, std::vector<float>>) {
    out.clear();
    for (const json& e : *it) {
      if (!e.is_number()) return invalid_argument(std::string("icl config JSON: '") + key + "' must hold numbers");
      out.push_back(to_float(e));
    }
  } else if constexpr (std::is_same_v<T, float>) {
    out = to_float(*it);
  } else {
    out = it->get<T>();
  }
  return Status::ok();
}

template <typename E>
Status read_enum(const json& j, const char* key, E& out, int count) {
  int v = 0;
  RILL_RETURN_IF_ERROR(read(j, key, v));
  if (v < 0 || v >= count) return invalid_argument(std::string("icl config JSON: '") + key + "' is not a known value");
  out = E(v);
  return Status::ok();
}

// A key not written by config_to_json is a file from elsewhere or a typo: refused, named.
Status only_keys(const json& j, const char* where, std::initializer_list<std::string_view> known) {
  for (const auto& [key, unused] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return invalid_argument(std::string("icl config JSON: unknown key '") + key + "' in " + where);
  return Status::ok();
}

Status object(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return invalid_argument(std::string("icl config JSON: '") + key + "' must be an object");
  return Status::ok();
}

}  // namespace

Result<TrainConfig> config_from_json(const std::string& text) {
  // nlohmann stops reading at a NUL and keeps one of two equal keys: refuse both first.
  if (text.find('\0') != std::string::npos) return invalid_argument("icl config JSON: contains a NUL byte");
  if (nests_deeper_than(text, kMaxIclConfigNesting))
    return invalid_argument("icl config JSON: nests deeper than a config does");
  if (auto dup = first_duplicate_key(text))
    return invalid_argument("icl config JSON: the key '" + *dup + "' appears twice in one object");
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("icl config JSON: not a JSON object");
  RILL_RETURN_IF_ERROR(object(j, "task"));
  RILL_RETURN_IF_ERROR(object(j, "model"));
  RILL_RETURN_IF_ERROR(object(j, "optimizer"));
  TrainConfig c;
  const json &t = j["task"], &m = j["model"], &o = j["optimizer"];
  RILL_RETURN_IF_ERROR(
      only_keys(j, "the config", {"task", "model", "optimizer", "batch", "seed", "read_every", "on_nonfinite"}));
  RILL_RETURN_IF_ERROR(only_keys(t, "task", {"d", "n", "data", "gamma_shape", "gamma_scale", "noise", "sigma_max",
                                             "categories"}));
  RILL_RETURN_IF_ERROR(only_keys(m, "model", {"layers", "heads", "param", "convention", "init_std"}));
  RILL_RETURN_IF_ERROR(
      only_keys(o, "optimizer", {"kind", "lr", "momentum", "beta1", "beta2", "eps", "clip_norm"}));
  RILL_RETURN_IF_ERROR(read(t, "d", c.task.d));
  RILL_RETURN_IF_ERROR(read(t, "n", c.task.n));
  RILL_RETURN_IF_ERROR(read_enum(t, "data", c.task.data, 2));
  RILL_RETURN_IF_ERROR(read(t, "gamma_shape", c.task.gamma_shape));
  RILL_RETURN_IF_ERROR(read(t, "gamma_scale", c.task.gamma_scale));
  RILL_RETURN_IF_ERROR(read_enum(t, "noise", c.task.noise, 3));
  RILL_RETURN_IF_ERROR(read(t, "sigma_max", c.task.sigma_max));
  RILL_RETURN_IF_ERROR(read(t, "categories", c.task.categories));
  RILL_RETURN_IF_ERROR(read(m, "layers", c.model.layers));
  RILL_RETURN_IF_ERROR(read(m, "heads", c.model.heads));
  RILL_RETURN_IF_ERROR(read_enum(m, "param", c.model.param, 3));
  RILL_RETURN_IF_ERROR(read_enum(m, "convention", c.model.convention, 2));
  RILL_RETURN_IF_ERROR(read(m, "init_std", c.model.init_std));
  RILL_RETURN_IF_ERROR(read_enum(o, "kind", c.optimizer.kind, 2));
  RILL_RETURN_IF_ERROR(read(o, "lr", c.optimizer.lr));
  RILL_RETURN_IF_ERROR(read(o, "momentum", c.optimizer.momentum));
  RILL_RETURN_IF_ERROR(read(o, "beta1", c.optimizer.beta1));
  RILL_RETURN_IF_ERROR(read(o, "beta2", c.optimizer.beta2));
  RILL_RETURN_IF_ERROR(read(o, "eps", c.optimizer.eps));
  RILL_RETURN_IF_ERROR(read(o, "clip_norm", c.optimizer.clip_norm));
  RILL_RETURN_IF_ERROR(read(j, "batch", c.batch));
  RILL_RETURN_IF_ERROR(read(j, "seed", c.seed));
  RILL_RETURN_IF_ERROR(read(j, "read_every", c.read_every));
  RILL_RETURN_IF_ERROR(read_enum(j, "on_nonfinite", c.on_nonfinite, 2));
  RILL_RETURN_IF_ERROR(validate(c));
  return c;
}

}  // namespace rill::icl::detail
