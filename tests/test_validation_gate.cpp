// Proves the gate every GPU test relies on: with synchronization validation on, a missing
// barrier is reported. The recorder's automatic barriers are switched off for one sequence.
#include "gpu_test.hpp"
#include "sequence_impl.hpp"

TEST_CASE("synchronization validation reports a missing barrier", "[validation][gpu]") {
  rill_test::clear_validation_messages();
  {
    auto ctx = rill_test::make_context();
    const uint32_t n = 4096;
    auto x = ctx.tensor(rill::DType::kF32, {n});
    auto y = ctx.tensor(rill::DType::kF32, {n});
    REQUIRE(x.is_ok());
    REQUIRE(y.is_ok());
    auto seq = ctx.sequence();
    REQUIRE(seq.is_ok());
    seq->impl().auto_barriers = false;
    REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 1.0f)).is_ok());       // writes x
    REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 1.0f)).is_ok());  // reads x: RAW hazard
    REQUIRE(seq->run().is_ok());
  }
  const auto messages = rill_test::validation_messages();
  bool hazard = false;
  for (const auto& m : messages) hazard = hazard || m.find("SYNC-HAZARD-READ-AFTER-WRITE") != std::string::npos;
  INFO("messages: " << messages.size());
  CHECK(hazard);
  rill_test::clear_validation_messages();
}

GPU_TEST_CASE("the same two dispatches with automatic barriers are clean", "[validation][gpu]") {
  auto ctx = rill_test::make_context();
  const uint32_t n = 4096;
  auto x = ctx.tensor(rill::DType::kF32, {n});
  auto y = ctx.tensor(rill::DType::kF32, {n});
  auto seq = ctx.sequence();
  REQUIRE(seq->dispatch(rill_test::fill_dispatch(*x, n, 1.0f)).is_ok());
  REQUIRE(seq->dispatch(rill_test::saxpy_dispatch(*x, *y, n, 1.0f)).is_ok());
  REQUIRE(seq->run(3).is_ok());
}
