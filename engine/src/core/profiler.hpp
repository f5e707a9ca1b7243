// The per-context event collector behind RILL_PROFILE. When disabled every hook is one branch.
#pragma once

#include <chrono>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "rill/profile.hpp"

namespace rill::detail {

class Profiler {
 public:
  // Events kept per context: about 200 MB of them. A long run keeps its first ones and says so once
  // (a decode loop left profiling on grew without end).
  static constexpr size_t kMaxEvents = size_t(1) << 20;

  // Every context's times count from the process's first profiler: one trace holds them all.
  Profiler() : origin_(process_origin()) {}

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  void enable(std::string path) { path_ = std::move(path); }

  // Microseconds since the process's first profiler was made (trace times start near zero).
  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  }
  void add(ProfileEvent event) {
    if (enabled()) keep(std::move(event));
  }
  void add_host(std::string name, std::string category, double start_us) {
    if (!enabled()) return;
    ProfileEvent e;
    e.track = ProfileEvent::Track::kHost;
    e.name = std::move(name);
    e.category = std::move(category);
    e.start_us = start_us;
    e.duration_us = now_us() - start_us;
    keep(std::move(e));
  }
  // add_host for work that has happened: the name is built only when profiling, and running out
  // of host memory loses the event, never the work's result.
  template <typename MakeName>
  void add_host_after(MakeName&& make_name, const char* category, double start_us) noexcept {
    if (!enabled()) return;
    try {
      add_host(make_name(), category, start_us);
    } catch (const std::bad_alloc&) {
    }
  }
  const std::vector<ProfileEvent>& events() const { return events_; }

 private:
  static std::chrono::steady_clock::time_point process_origin() {
    static const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
    return origin;
  }
  void keep(ProfileEvent&& e) {
    if (events_.size() < kMaxEvents) {
      events_.push_back(std::move(e));
    } else if (dropped_++ == 0) {
      log_message(MessageSeverity::kWarning, "profile '" + path_ + "': more than " + std::to_string(kMaxEvents) +
                                                 " events; later ones are not recorded");
    }
  }

  std::chrono::steady_clock::time_point origin_;
  uint64_t dropped_ = 0;
  std::string path_;
  std::vector<ProfileEvent> events_;
};

}  // namespace rill::detail
