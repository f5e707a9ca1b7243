// Chrome trace-event JSON (the format Perfetto and chrome://tracing open): write and read back.
#include <nlohmann/json.hpp>

#include "rill/profile.hpp"

namespace rill {
namespace {

constexpr int kHostTid = 1;
constexpr int kGpuTid = 2;

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
  return doc.dump(1);
}

Result<std::vector<ProfileEvent>> parse_chrome_trace(const std::string& json_text) {
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
      if (j.contains("args") && j["args"].is_object()) {
        const auto& a = j["args"];
        e.kernel = a.value("kernel", "");
        e.variant = a.value("variant", "");
        if (a.contains("groups") && a["groups"].is_array() && a["groups"].size() == 3)
          for (int i = 0; i < 3; ++i) e.groups[i] = a["groups"][size_t(i)].get<uint32_t>();
        e.flops = a.value("flops", uint64_t{0});
        e.bytes = a.value("bytes", uint64_t{0});
        e.replays = a.value("replays", 1u);
        e.pipeline = a.value("pipeline", 0u);
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

}  // namespace rill
