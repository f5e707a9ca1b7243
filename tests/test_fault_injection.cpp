// Allocation failure injected at every resource-creating call of a small workload, one at a time:
// each failure is a clean ResourceExhausted, nothing leaks, and the context still works after.
#include "context_impl.hpp"
#include "gpu_test.hpp"

namespace {

// Tensors, uploads, a sequence with dispatches of new pipelines and a download.
rill::Status workload(rill::Context& ctx, int round, std::vector<float>* result) {
  const uint32_t n = 3000;
  RILL_ASSIGN_OR_RETURN(rill::Tensor x, ctx.tensor(rill::DType::kF32, {n}, "x"));
  RILL_ASSIGN_OR_RETURN(rill::Tensor y, ctx.tensor(rill::DType::kF32, {n}, "y", rill::MemoryPool::kWeights));
  RILL_ASSIGN_OR_RETURN(rill::Tensor big, ctx.tensor(rill::DType::kF32, {9 << 20}, "big"));  // dedicated block
  RILL_RETURN_IF_ERROR(ctx.upload_floats(x, std::vector<float>(n, 2.0f)));
  RILL_ASSIGN_OR_RETURN(rill::Sequence seq, ctx.sequence({.timestamps = ctx.device().caps.timestamps}));
  RILL_RETURN_IF_ERROR(seq.dispatch(rill_test::fill_dispatch(y, n, 1.0f)));
  auto d = rill_test::saxpy_dispatch(x, y, n, 3.0f);
  d.spec = {rill::spec_uint("WG_SIZE", 64 + uint32_t(round % 900))};  // a new pipeline every round
  d.groups = {(n + 63) / 64, 1, 1};
  RILL_RETURN_IF_ERROR(seq.dispatch(d));
  RILL_RETURN_IF_ERROR(seq.fill_zero(big));
  const std::vector<float> twos(n, 2.0f);  // same as the synchronous upload: every replay gives 7
  RILL_RETURN_IF_ERROR(seq.upload(x, {reinterpret_cast<const uint8_t*>(twos.data()), twos.size() * 4}));
  RILL_ASSIGN_OR_RETURN(rill::DownloadId id, seq.download(y));
  RILL_RETURN_IF_ERROR(seq.run(2));
  RILL_ASSIGN_OR_RETURN(*result, seq.read_floats(id));
  return rill::Status::ok();
}

}  // namespace

GPU_TEST_CASE("every injected allocation failure is clean, leak-free and recoverable", "[faults][gpu]") {
  auto ctx = rill_test::make_context();
  auto& faults = ctx.impl().faults;
  int failures = 0;
  for (uint64_t k = 1; k < 200; ++k) {
    INFO("failing call " << k);
    faults.fail_nth(k);
    const uint64_t seen_before = faults.calls_seen();
    std::vector<float> result;
    const rill::Status s = workload(ctx, int(k), &result);
    const bool injected = faults.calls_seen() - seen_before >= k;
    faults.fail_nth(0);
    REQUIRE(ctx.wait_idle().is_ok());
    CHECK(ctx.memory_stats().live_allocations == 0);
    if (!injected) {
      REQUIRE(s.is_ok());  // the workload has fewer than k resource calls: done
      CHECK(failures > 5);
      return;
    }
    ++failures;
    INFO(s.to_string());
    CHECK(s.code() == rill::StatusCode::kResourceExhausted);
    // Still usable: the same workload succeeds without injection.
    std::vector<float> ok_result;
    const rill::Status retry = workload(ctx, 1000 + int(k), &ok_result);
    INFO("retry: " << retry.to_string());
    REQUIRE(retry.is_ok());
    CHECK(ok_result[0] == 7.0f);  // y = 3 * 2 + 1
  }
  FAIL("the workload never ran out of injection points");
}
