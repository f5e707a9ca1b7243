// A parallel loop for host work that is large and independent per item (scoring evaluation tasks
// against the ridge baselines): contiguous ranges on short-lived threads, joined before returning.
// Results must not depend on the split: callers write per-item outputs and reduce them in order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "platform/host_resources.hpp"

namespace rill::detail {

// f(begin, end) over [0, n): as many ranges as the process may use processors (at most 16), each of at
// least `grain` items; the calling thread runs the first, and any range no thread could be
// started for. An exception from any range (std::bad_alloc) is rethrown here once every thread
// has joined: a thread left joinable, or an exception leaving one, would terminate the process.
template <typename F>
void parallel_for(std::size_t n, std::size_t grain, F&& f) {
  const std::size_t hardware = platform::usable_cpus();
  const std::size_t ranges =
      std::clamp<std::size_t>(n / std::max<std::size_t>(grain, 1), 1, std::min<std::size_t>(hardware, 16));
  const std::size_t per = (n + ranges - 1) / ranges;
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto run = [&](std::size_t begin, std::size_t end) noexcept {
    try {
      f(begin, end);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  struct JoinAll {
    std::vector<std::thread>& threads;
    ~JoinAll() {
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
  } join_all{threads};
  try {
    threads.reserve(ranges);
  } catch (...) {  // no room for the handles: the calling thread does every range
  }
  for (std::size_t r = 1; r < ranges; ++r) {
    const std::size_t begin = r * per, end = std::min(n, begin + per);
    if (begin >= end) continue;
    if (threads.size() < threads.capacity()) {
      try {
        threads.emplace_back([&run, begin, end] { run(begin, end); });
        continue;
      } catch (const std::system_error&) {  // no thread to be had: this one does the work
      }
    }
    run(begin, end);
  }
  run(0, std::min(n, per));
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace rill::detail
