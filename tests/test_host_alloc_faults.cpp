// Running out of host memory at every allocation, one at a time, of the calls that read, write and
// move saved state, of decoding and prefill, and of ICL training and evaluation: nothing is thrown
// through the API, each
// failure is ResourceExhausted, nothing on the device leaks, a saved file is never damaged, and
// the object the call worked on is as it was (or, where the call may have changed it part way,
// refused until it is reset or restored) and then works.
//
// The contexts here run without the validation layer: HostAllocFailure leaves the layer's own
// allocations alone, but its callbacks into rill would be counted as rill's and fail inside it.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fault_test_models.hpp"
#include "gpu_test.hpp"
#include "host_alloc_faults.hpp"
#include "rill/files.hpp"
#include "rill/icl.hpp"
#include "rill/lm.hpp"
#include "rill/safetensors.hpp"
#include "rill/tokenizer.hpp"
#include "sentencepiece_bytes.hpp"
#include "temp_path.hpp"

namespace {

using rill_test::small_icl_config;
using rill_test::small_lm_config;

rill::Context plain_context() { return rill_test::make_context(rill::ContextOptions{}); }

// For n = 1, 2, ...: `prepare`, then `work` with the n-th counted host allocation failing, then
// `check` of its status; until `work` needs fewer than n allocations (it must then succeed). Each
// n runs twice: with that allocation failing alone, and with every one after it failing too (what
// handles the first failure, its message and its clean-up, must then do without memory).
// Returns the failures injected, per pass. Device memory must not grow from round to round (what
// the object under test keeps, a workspace or a cache, is made in a first round without a failure).
int each_host_failure(rill::Context& ctx, const std::function<void()>& prepare,
                      const std::function<rill::Status()>& work,
                      const std::function<void(const rill::Status&)>& check) {
  prepare();  // once without a failure: what the work makes on first use and keeps
  REQUIRE(work().is_ok());
  check(rill::Status::ok());
  uint64_t held = 0;
  for (uint64_t n = 1; n < 20000; ++n) {
    bool fired = false;
    for (const auto mode : {rill_test::HostAllocMode::kOnce, rill_test::HostAllocMode::kFromThenOn}) {
      prepare();
      REQUIRE(ctx.wait_idle().is_ok());
      INFO("failing host allocation " << n << (mode == rill_test::HostAllocMode::kOnce ? " alone" : " and on"));
      if (n == 1 && mode == rill_test::HostAllocMode::kOnce) held = ctx.memory_stats().live_allocations;
      // Nothing left behind by the rounds before (a failure may drop what a call keeps: fewer is fine).
      CHECK(ctx.memory_stats().live_allocations <= held);
      rill::Status s = rill::Status::ok();
      const char* escaped = nullptr;
      {
        const rill_test::HostAllocFailure failure(n, mode);
        try {
          s = work();
        } catch (const std::bad_alloc&) {
          escaped = "std::bad_alloc";
        } catch (...) {
          escaped = "an exception";
        }
        fired = failure.fired();
      }
      INFO(s.to_string());
      if (escaped != nullptr) FAIL(escaped << " crossed the API");
      REQUIRE(ctx.wait_idle().is_ok());
      if (!fired) {  // the work took fewer than n allocations this time
        REQUIRE(s.is_ok());
        check(s);
        // The first pass ends the drill. Counts can differ by a few from run to run (what a wait
        // collects depends on the GPU's timing), so the second pass may miss n near the end.
        if (mode == rill_test::HostAllocMode::kOnce) return int(n - 1);
        continue;
      }
      // A call may do without what it failed to allocate (a cache's copy) and succeed.
      if (!s.is_ok()) CHECK(s.code() == rill::StatusCode::kResourceExhausted);
      check(s);
    }
  }
  FAIL("the work never ran out of allocations to fail");
  return 0;
}

std::vector<uint8_t> bytes_of(const std::string& path) { return rill::read_file(path, 1 << 24).value(); }

// How a session came to where it is: the calls, replayed on a fresh session (a prefill's chunks
// and a decoding step round differently, so a twin must take the same calls).
using Replay = std::function<void(rill::lm::Session&)>;

Replay prefills(std::vector<std::vector<uint32_t>> calls) {
  return [calls](rill::lm::Session& s) {
    for (const auto& tokens : calls)
      if (!tokens.empty()) REQUIRE(s.prefill(tokens).is_ok());
  };
}

// The next token's logits from a fresh session of `model` after `replay`.
std::vector<float> logits_after(rill::lm::Model& model, const Replay& replay, uint32_t next) {
  auto twin = model.session().value();
  replay(twin);
  return twin.decode(next).value();
}

// A session after a failed call: where it was, or refused (spent) until reset. Returns whether spent.
bool check_as_before_or_refused(rill::lm::Model& model, rill::lm::Session& session, const Replay& before) {
  auto next = session.decode(7);
  if (next.is_ok()) {
    CHECK(next.value() == logits_after(model, before, 7));
    return false;
  }
  CHECK(next.status().code() == rill::StatusCode::kFailedPrecondition);
  REQUIRE(session.reset().is_ok());
  CHECK(session.decode(7).value() == logits_after(model, prefills({}), 7));
  return true;
}

}  // namespace

// A restore that fails while it reads and checks leaves the session where it was; one that fails
// while it uploads leaves it at position 0 (staged uploads) or refused until a restore or reset.
GPU_TEST_CASE("host memory running out in a state restore leaves the session as it was or refused",
              "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  auto model = rill::lm::Model::create(ctx, rill::lm::Weights::random(small_lm_config(), 6).value()).value();
  const std::vector<uint32_t> saved_tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9}, start = {4, 4, 4};
  auto saver = model.session().value();
  REQUIRE(saver.prefill(saved_tokens).is_ok());
  const std::string path = rill_test::temp_path("host-faults-state.safetensors");
  REQUIRE(saver.save_state(path).is_ok());
  const std::vector<uint8_t> saved = bytes_of(path);
  for (const bool from_file : {true, false}) {
    INFO((from_file ? "restore_state" : "deserialize_state"));
    auto session = model.session().value();
    const int failures = each_host_failure(
        ctx,
        [&] {
          REQUIRE(session.reset().is_ok());
          REQUIRE(session.prefill(start).is_ok());
        },
        [&] { return from_file ? session.restore_state(path) : session.deserialize_state(saved); },
        [&](const rill::Status& s) {
          if (s.is_ok()) {
            CHECK(session.decode(7).value() == logits_after(model, prefills({saved_tokens}), 7));
            return;
          }
          // Where memory is staged (no host-mapped device memory), a restore that fails part way
          // through its uploads resets the session to position 0 rather than leave it mixed.
          if (session.position() == 0) {
            CHECK(s.message().find("reset to position 0") != std::string::npos);
            CHECK(session.decode(7).value() == logits_after(model, prefills({}), 7));
            return;
          }
          check_as_before_or_refused(model, session, prefills({start}));
        });
    CHECK(failures > 5);
  }
  std::remove(path.c_str());
}

// A save that fails leaves the file saved before as it was (writes are atomic).
GPU_TEST_CASE("host memory running out in a state save leaves the saved file and the session as they were",
              "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  auto model = rill::lm::Model::create(ctx, rill::lm::Weights::random(small_lm_config(), 6).value()).value();
  const std::vector<uint32_t> older = {1, 2}, newer = {3, 4, 5, 6, 7};
  auto session = model.session().value();
  REQUIRE(session.prefill(older).is_ok());
  const std::string path = rill_test::temp_path("host-faults-save.safetensors");
  REQUIRE(session.save_state(path).is_ok());
  const std::vector<uint8_t> before = bytes_of(path);
  REQUIRE(session.prefill(newer).is_ok());
  const int failures = each_host_failure(
      ctx, [&] { REQUIRE(rill::write_file_atomic(path, before).is_ok()); }, [&] { return session.save_state(path); },
      [&](const rill::Status& s) {
        if (!s.is_ok()) CHECK(bytes_of(path) == before);
      });
  CHECK(failures > 5);
  CHECK(bytes_of(path) != before);  // the last save, with no failure, wrote the newer state
  CHECK(check_as_before_or_refused(model, session, prefills({older, newer})) == false);
  std::remove(path.c_str());
}

// A decoding step or a prefill that runs out: as before, or (past its submit) refused until reset.
void check_decode_or_prefill(const std::vector<uint32_t>& tokens) {
  auto ctx = plain_context();
  auto model = rill::lm::Model::create(ctx, rill::lm::Weights::random(small_lm_config(), 6).value()).value();
  const std::vector<uint32_t> start = {4, 4, 4};
  auto session = model.session().value();
  const int failures = each_host_failure(
      ctx,
      [&] {
        REQUIRE(session.reset().is_ok());
        REQUIRE(session.prefill(start).is_ok());
      },
      [&] { return tokens.size() == 1 ? session.decode(tokens[0]).status() : session.prefill(tokens).status(); },
      [&](const rill::Status& s) {
        if (s.is_ok()) {
          const Replay replay = [&](rill::lm::Session& twin) {
            REQUIRE(twin.prefill(start).is_ok());
            REQUIRE((tokens.size() == 1 ? twin.decode(tokens[0]).status() : twin.prefill(tokens).status()).is_ok());
          };
          CHECK(session.decode(7).value() == logits_after(model, replay, 7));
          return;
        }
        // A prefill may have taken some of its tokens (segments that worked) before the failure.
        REQUIRE(session.position() >= start.size());
        const auto done = std::ptrdiff_t(session.position() - start.size());
        REQUIRE(done < std::ptrdiff_t(tokens.size()));
        check_as_before_or_refused(model, session,
                                   prefills({start, std::vector<uint32_t>(tokens.begin(), tokens.begin() + done)}));
      });
  CHECK(failures >= 2);
}

GPU_TEST_CASE("host memory running out in a decode leaves the session as it was or refused",
              "[faults][host-faults][gpu]") {
  check_decode_or_prefill({9});
}

// Two segments of the small model's 8-position blocks: about 1,100 allocations, 40 s on 2 cores
// here; the sanitizer build (emulated()) takes one segment, a few dozen.
GPU_TEST_CASE("host memory running out in a prefill leaves the session as it was or refused",
              "[faults][host-faults][gpu]") {
  if (rill_test::emulated()) {
    WARN("emulated: a prefill of one segment, not two");
    check_decode_or_prefill({9, 8, 9, 8, 9});
  } else {
    check_decode_or_prefill({9, 8, 9, 8, 9, 8, 9, 8, 9, 8});
  }
}

// Reading weights, task sets and checkpoints: ResourceExhausted and nothing else.
GPU_TEST_CASE("host memory running out while files are read is ResourceExhausted", "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  const std::string config = rill_test::temp_path("host-faults.json"),
                    weights = rill_test::temp_path("host-faults-weights.safetensors"),
                    tasks = rill_test::temp_path("host-faults-tasks.safetensors"),
                    checkpoint = rill_test::temp_path("host-faults-checkpoint.safetensors");
  REQUIRE(rill::lm::Weights::random(small_lm_config(), 2).value().save(config, weights).is_ok());
  auto trainer = rill::icl::Trainer::create(ctx, small_icl_config()).value();
  REQUIRE(trainer.train(2).is_ok());
  REQUIRE(rill::icl::save_task_set(tasks, trainer.sample_task_set(5, 11).value()).is_ok());
  REQUIRE(trainer.save_checkpoint(checkpoint).is_ok());
  const auto none = [] {};
  const auto any = [](const rill::Status&) {};
  CHECK(each_host_failure(
            ctx, none, [&] { return rill::lm::Weights::load(config, weights).status(); }, any) > 5);
  CHECK(each_host_failure(
            ctx, none, [&] { return rill::icl::load_task_set(tasks).status(); }, any) > 5);
  CHECK(each_host_failure(
            ctx, none, [&] { return rill::icl::Trainer::resume(ctx, checkpoint).status(); }, any) > 5);
  for (const std::string& path : {config, weights, tasks, checkpoint}) std::remove(path.c_str());
}

// A grid model's checkpoint: a failed load leaves the model as it was, a failed save the file.
GPU_TEST_CASE("host memory running out in a grid's checkpoint load or save changes nothing",
              "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  const std::vector<rill::icl::TrainConfig> configs(2, small_icl_config());
  auto grid = rill::icl::TrainerGrid::create(ctx, configs).value();
  const std::string original = rill_test::temp_path("host-faults-grid-original.safetensors"),
                    trained = rill_test::temp_path("host-faults-grid-trained.safetensors"),
                    now = rill_test::temp_path("host-faults-grid-now.safetensors");
  REQUIRE(grid.save_checkpoint(1, original).is_ok());
  REQUIRE(grid.train(3).is_ok());
  REQUIRE(grid.save_checkpoint(1, trained).is_ok());
  REQUIRE(grid.load_checkpoint(1, original).is_ok());
  const int loads = each_host_failure(
      ctx, [&] { REQUIRE(grid.load_checkpoint(1, original).is_ok()); },
      [&] { return grid.load_checkpoint(1, trained); },
      [&](const rill::Status& s) {
        REQUIRE(grid.save_checkpoint(1, now).is_ok());
        CHECK(bytes_of(now) == bytes_of(s.is_ok() ? trained : original));
      });
  CHECK(loads > 5);
  const std::vector<uint8_t> saved_before = bytes_of(original);
  const int saves = each_host_failure(
      ctx, [&] { REQUIRE(rill::write_file_atomic(original, saved_before).is_ok()); },
      [&] { return grid.save_checkpoint(1, original); },
      [&](const rill::Status& s) {
        if (!s.is_ok()) CHECK(bytes_of(original) == saved_before);
      });
  CHECK(saves > 5);
  CHECK(bytes_of(original) == bytes_of(trained));
  for (const std::string& path : {original, trained, now}) std::remove(path.c_str());
}

// Training: a failure is ResourceExhausted, and the trainer then trains on (it catches up with
// the device's step).
GPU_TEST_CASE("host memory running out in ICL training leaves the trainer working", "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  auto trainer = rill::icl::Trainer::create(ctx, small_icl_config()).value();
  const int steps = each_host_failure(
      ctx, [] {}, [&] { return trainer.train(3).status(); },
      [&](const rill::Status&) { REQUIRE(trainer.train(1).is_ok()); });
  CHECK(steps > 2);
}

// Evaluating: a failure is ResourceExhausted, and the trainer then evaluates as one that never
// failed (an evaluation's kept baselines are whole or absent). A fresh trainer each time: a trainer
// keeps the baselines of its first evaluation.
GPU_TEST_CASE("host memory running out in an ICL evaluation leaves the trainer working", "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  auto trained = rill::icl::Trainer::create(ctx, small_icl_config()).value();
  REQUIRE(trained.train(3).is_ok());
  const std::vector<float> parameters = trained.parameters().value();
  const rill::icl::EvalOptions options{.tasks = 40, .tune_tunedrr = false};
  std::optional<rill::icl::Trainer> fresh;
  auto make_fresh = [&] {
    fresh.reset();
    fresh.emplace(rill::icl::Trainer::create(ctx, small_icl_config()).value());
    REQUIRE(fresh->set_parameters(parameters).is_ok());
  };
  make_fresh();
  const rill::icl::EvalReport expected = fresh->evaluate(options).value();
  const int evaluations = each_host_failure(
      ctx, make_fresh, [&] { return fresh->evaluate(options).status(); },
      [&](const rill::Status&) {
        const rill::icl::EvalReport again = fresh->evaluate(options).value();
        CHECK(again.model == expected.model);
        CHECK(again.least_squares == expected.least_squares);
        CHECK(again.ridge_oracle == expected.ridge_oracle);
      });
  CHECK(evaluations > 5);
}

// The smaller calls: a tokenizer's load, encode and decode, a text stream's pushes, a probe, a grid
// model's parameters and trainer, a sequence's timings and a tensor: ResourceExhausted, never an
// exception, and nothing left on the device.
GPU_TEST_CASE("host memory running out in the tokenizer, a probe, timings or a tensor is ResourceExhausted",
              "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  const std::string model_path = rill_test::temp_path("host-faults-tokenizer.model");
  const std::string model_bytes = rill_test::spm::model(rill_test::spm::CharsMap().blob());
  REQUIRE(rill::write_file_atomic(model_path, std::vector<uint8_t>(model_bytes.begin(), model_bytes.end())).is_ok());
  const auto tokenizer = rill::lm::Tokenizer::load_sentencepiece(model_path).value();
  const std::vector<uint32_t> tokens = tokenizer.encode("ab ba abba", true).value();
  const std::string text = tokenizer.decode(tokens).value();
  const auto none = [] {};
  const auto any = [](const rill::Status&) {};
  CHECK(each_host_failure(
            ctx, none, [&] { return rill::lm::Tokenizer::load_sentencepiece(model_path).status(); }, any) > 3);
  CHECK(each_host_failure(
            ctx, none, [&] { return tokenizer.encode("ab ba abba", true).status(); }, any) >= 1);
  CHECK(each_host_failure(
            ctx, none, [&] { return tokenizer.decode(tokens).status(); }, any) >= 1);
  std::optional<rill::lm::TextStream> stream;
  std::string streamed;
  CHECK(each_host_failure(
            ctx, [&] { stream.emplace(tokenizer), streamed.clear(); },
            [&]() -> rill::Status {
              for (uint32_t t : tokens) {
                RILL_ASSIGN_OR_RETURN(std::string piece, stream->push(t));
                streamed += piece;
              }
              return rill::Status::ok();
            },
            [&](const rill::Status& s) {
              if (s.is_ok()) CHECK(streamed + stream->finish() == text);
            }) >= 1);
  std::remove(model_path.c_str());

  auto trainer = rill::icl::Trainer::create(ctx, small_icl_config()).value();
  REQUIRE(trainer.train(2).is_ok());
  CHECK(each_host_failure(
            ctx, none, [&] { return trainer.probe(5).status(); }, any) > 3);
  auto grid = rill::icl::TrainerGrid::create(ctx, std::vector<rill::icl::TrainConfig>(2, small_icl_config())).value();
  CHECK(each_host_failure(
            ctx, none, [&] { return grid.parameters(1).status(); }, any) > 3);
  CHECK(each_host_failure(
            ctx, none, [&] { return grid.trainer(1).status(); }, any) > 3);

  auto x = ctx.tensor(rill::DType::kF32, {64}).value();
  auto y = ctx.tensor(rill::DType::kF32, {64}).value();
  auto timed = ctx.sequence({.timestamps = true}).value();
  REQUIRE(timed.dispatch(rill_test::saxpy_dispatch(x, y, 64, 2.0f)).is_ok());
  REQUIRE(timed.run().is_ok());
  CHECK(each_host_failure(
            ctx, none, [&] { return timed.timings().status(); }, any) >= 1);
  // The shape and name are moved in: a copy at the call would be the caller's allocation.
  std::vector<int64_t> shape;
  std::string name;
  CHECK(each_host_failure(
            ctx,
            [&] {
              shape = {7, 3}, name = "a tensor's name past the short-string size";
            },
            [&] { return ctx.tensor(rill::DType::kF32, std::move(shape), std::move(name)).status(); }, any) >= 1);
}

// A view that runs out of host memory while it is made (its shape or name) is ResourceExhausted,
// and the tensor keeps its memory: a view destroyed half-built once released its parent's range,
// which the next tensor then took and overwrote.
GPU_TEST_CASE("host memory running out while a view is made leaves the tensor its memory",
              "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  auto t = ctx.tensor(rill::DType::kF32, {16, 64}, "a tensor's name past the short-string size").value();
  std::vector<float> values(16 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i);
  REQUIRE(ctx.upload_floats(t, values).is_ok());
  const uint64_t used = ctx.memory_stats().used_bytes;
  const auto kept = [&](const rill::Status&) {
    CHECK(ctx.memory_stats().used_bytes == used);
    auto other = ctx.tensor(rill::DType::kF32, {16, 64}).value();
    REQUIRE(ctx.upload_floats(other, std::vector<float>(16 * 64, -1.0f)).is_ok());
    const bool contents_kept = ctx.download_floats(t).value() == values;
    CHECK(contents_kept);
  };
  std::vector<int64_t> shape;
  CHECK(each_host_failure(
            ctx,
            [&] {
              shape = {4, 4, 64};
            },
            [&] { return t.reshaped(std::move(shape)).status(); }, kept) >= 1);
  CHECK(each_host_failure(
            ctx, [] {}, [&] { return t.rows(4, 8).status(); }, kept) >= 2);
}

// A tensor added while host memory runs out is not half added: the writer takes it again, and the
// file holds every tensor that was added.
GPU_TEST_CASE("host memory running out in a safetensors writer leaves it as it was", "[faults][host-faults][gpu]") {
  auto ctx = plain_context();
  std::optional<rill::SafetensorsWriter> writer;
  const std::vector<float> values(64, 1.5f);
  const std::string kName = "a tensor's name past the short-string size";
  // The name and shape are moved in: a copy at the call would be the caller's allocation.
  std::string name;
  std::vector<int64_t> shape;
  CHECK(each_host_failure(
            ctx,
            [&] {
              writer.emplace();
              REQUIRE(writer->add_floats("first", {64}, values).is_ok());
              name = kName, shape = {8, 8};
            },
            [&] { return writer->add_floats(std::move(name), std::move(shape), values); },
            [&](const rill::Status& s) {
              if (!s.is_ok()) REQUIRE(writer->add_floats(kName, {8, 8}, values).is_ok());
              const auto file = rill::SafetensorsFile::from_bytes(writer->serialize()).value();
              CHECK(file.entries().size() == 2);
            }) >= 2);
}
