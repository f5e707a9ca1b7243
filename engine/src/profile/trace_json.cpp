// Chrome trace-event JSON (the format Perfetto and chrome://tracing open): write and read back.
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/host_memory_guard.hpp"
#include "core/json_keys.hpp"
#include "rill/profile.hpp"

namespace rill {
namespace {

constexpr int kHostTid = 1;
constexpr int kGpuTid = 2;
constexpr size_t kMaxTraceNesting = 8;  // a trace nests 5 deep (document, events, event, args, statistics)

nlohmann::json thread_name(int tid, const char* name) {
  return {{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

std::string chrome_trace_json(const std::vector<ProfileEvent>& events, const std::string& device,
                              const DevicePeaks* peaks) {
  nlohmann::json trace = nlohmann::json::array();
  trace.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "rill: " + device}}}});
  trace.push_back(thread_name(kHostTid, "host"));
  trace.push_back(thread_name(kGpuTid, "GPU"));
  for (const ProfileEvent& e : events) {
    nlohmann::json j = {{"ph", "X"}, {"pid", 1}, {"tid", e.track == ProfileEvent::Track::kGpu ? kGpuTid : kHostTid},
                        {"name", e.name}, {"cat", e.category}, {"ts", e.start_us}, {"dur", e.duration_us}};
    if (!e.kernel.empty()) {
      j["args"] = {{"kernel", e.kernel}, {"variant", e.variant},
                   {"groups", {e.groups[0], e.groups[1], e.groups[2]}}, {"flops", e.flops},
                   {"bytes", e.bytes}, {"replays", e.replays}};
      if (e.pipeline != 0) j["args"]["pipeline"] = e.pipeline;
      if (!e.statistics.empty()) {
        nlohmann::json stats = nlohmann::json::array();
        for (const PipelineStatistic& s : e.statistics)
          stats.push_back({{"name", s.name}, {"value", s.value}, {"description", s.description}});
        j["args"]["statistics"] = std::move(stats);
      }
    }
    trace.push_back(std::move(j));
  }
  nlohmann::json doc = {{"traceEvents", trace}, {"displayTimeUnit", "ms"}, {"otherData", {{"device", device}}}};
  if (peaks) {
    doc["otherData"]["peaks"] = {{"fma_f32_gflops", peaks->fma_f32_gflops}, {"fma_f16_gflops", peaks->fma_f16_gflops},
                                 {"copy_gbps", peaks->copy_gbps}, {"dispatch_latency_us", peaks->dispatch_latency_us}};
  }
  // Names that are not UTF-8 (an event's label is the caller's) are written with U+FFFD in place
  // of the bad bytes: JSON cannot hold them, and the caller gets a trace rather than an exception.
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// A count of an event (a dispatch's groups, flops, bytes, ...): a non-negative integer within T's
// range, never a negative one wrapped or a fraction cut.
template <typename T>
Result<T> count_of(const nlohmann::json& v, const char* what) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<T>::max())
    return data_loss(std::string("trace event: '") + what + "' is " + v.dump() + ", not a count");
  return T(v.get<uint64_t>());
}

// The count `key` of an event's args; `fallback` where it is absent.
template <typename T>
Result<T> read_count(const nlohmann::json& args, const char* key, T fallback) {
  if (!args.contains(key)) return fallback;
  return count_of<T>(args[key], key);
}

Result<std::vector<ProfileEvent>> parse_chrome_trace_unguarded(const std::string& json_text) {
  if (nests_deeper_than(json_text, kMaxTraceNesting)) return data_loss("trace JSON nests deeper than a trace does");
  if (auto dup = first_duplicate_key(json_text)) return data_loss("trace JSON has the key '" + *dup + "' twice");
  try {
    const nlohmann::json doc = nlohmann::json::parse(json_text);
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
      return data_loss("not a trace: no traceEvents array");
    std::vector<ProfileEvent> out;
    for (const auto& j : doc["traceEvents"]) {
      if (!j.is_object() || j.value("ph", "") != "X") continue;
      ProfileEvent e;
      e.track = j.value("tid", kHostTid) == kGpuTid ? ProfileEvent::Track::kGpu : ProfileEvent::Track::kHost;
      e.name = j.value("name", "");
      e.category = j.value("cat", "");
      e.start_us = j.value("ts", 0.0);
      e.duration_us = j.value("dur", 0.0);
      if (e.duration_us < 0)
        return data_loss("trace event '" + e.name + "' lasts " + std::to_string(e.duration_us) + " us");
      if (j.contains("args") && j["args"].is_object()) {
        const auto& a = j["args"];
        e.kernel = a.value("kernel", "");
        e.variant = a.value("variant", "");
        if (a.contains("groups")) {
          const auto& g = a["groups"];
          if (!g.is_array() || g.size() != 3) return data_loss("trace event '" + e.name + "': groups are not 3 counts");
          for (size_t i = 0; i < 3; ++i) {
            RILL_ASSIGN_OR_RETURN(e.groups[i], count_of<uint32_t>(g[i], "groups"));
          }
        }
        RILL_ASSIGN_OR_RETURN(e.flops, read_count<uint64_t>(a, "flops", 0));
        RILL_ASSIGN_OR_RETURN(e.bytes, read_count<uint64_t>(a, "bytes", 0));
        RILL_ASSIGN_OR_RETURN(e.replays, read_count<uint32_t>(a, "replays", 1));
        RILL_ASSIGN_OR_RETURN(e.pipeline, read_count<uint32_t>(a, "pipeline", 0));
        if (a.contains("statistics") && a["statistics"].is_array()) {
          for (const auto& s : a["statistics"]) {
            if (!s.is_object()) continue;
            e.statistics.push_back({s.value("name", ""), s.value("value", 0.0), s.value("description", "")});
          }
        }
      }
      out.push_back(std::move(e));
    }
    return out;
  } catch (const nlohmann::json::exception& ex) {
    return data_loss(std::string("trace JSON is malformed: ") + ex.what());
  }
}

}  // namespace

Result<std::vector<ProfileEvent>> parse_chrome_trace(const std::string& json_text) {
  return detail::host_memory_guarded("trace", [&] { return parse_chrome_trace_unguarded(json_text); });
}

}  // namespace rill
