// usable_cpus: the processors the process may run on, which host thread pools and a CPU driver's
// cache keys are sized by.
#if defined(__linux__)
#include <sched.h>
#endif

#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "core/cpu_driver_threads.hpp"
#include "platform/host_resources.hpp"
#include "scoped_env.hpp"

TEST_CASE("usable processors are at least 1 and at most the machine's", "[core][platform]") {
  const unsigned usable = rill::platform::usable_cpus();
  CHECK(usable >= 1);
  if (std::thread::hardware_concurrency() > 0) CHECK(usable <= std::thread::hardware_concurrency());
}

#if defined(__linux__)
// As under `taskset -c N`: the calling thread's affinity mask, narrowed to one processor it may
// already use, then restored.
TEST_CASE("usable processors follow the affinity mask", "[core][platform]") {
  cpu_set_t before;
  CPU_ZERO(&before);
  REQUIRE(sched_getaffinity(0, sizeof before, &before) == 0);
  CHECK(rill::platform::usable_cpus() == unsigned(CPU_COUNT(&before)));
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const unsigned narrowed = rill::platform::usable_cpus();
  // A CPU driver's cache and tuning key counts them too (lavapipe sizes its threads by the mask).
  rill::DeviceInfo cpu_driver;
  cpu_driver.type = rill::DeviceType::kCpu;
  std::string key;
  {
    const rill_test::ScopedEnv no_lp("LP_NUM_THREADS", nullptr);
    key = rill::detail::cpu_driver_threads(cpu_driver);
  }
  REQUIRE(sched_setaffinity(0, sizeof before, &before) == 0);
  CHECK(narrowed == 1);
  CHECK(key == "threads1");
}
#endif
