// The per-context event collector behind RILL_PROFILE. When disabled every hook is one branch.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "rill/profile.hpp"

namespace rill::detail {

class Profiler {
 public:
  Profiler() : origin_(std::chrono::steady_clock::now()) {}

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  void enable(std::string path) { path_ = std::move(path); }

  // Microseconds since this profiler was made (trace times start near zero).
  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  }
  void add(ProfileEvent event) {
    if (enabled()) events_.push_back(std::move(event));
  }
  void add_host(std::string name, std::string category, double start_us) {
    if (!enabled()) return;
    ProfileEvent e;
    e.track = ProfileEvent::Track::kHost;
    e.name = std::move(name);
    e.category = std::move(category);
    e.start_us = start_us;
    e.duration_us = now_us() - start_us;
    events_.push_back(std::move(e));
  }
  const std::vector<ProfileEvent>& events() const { return events_; }

 private:
  std::chrono::steady_clock::time_point origin_;
  std::string path_;
  std::vector<ProfileEvent> events_;
};

}  // namespace rill::detail
