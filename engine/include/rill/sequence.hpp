// Sequence: records dispatches, copies, uploads and downloads into one command buffer, inserts
// the barriers itself from what each kernel reads and writes, and can be replayed many times.
//
//   auto seq = ctx.sequence().value();
//   seq.dispatch({.kernel = "util/saxpy", .bindings = {&x, &y}, .push = push_bytes(p),
//                 .groups = {n_groups, 1, 1}});
//   seq.run(1000);  // records once, submits 1000 times
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/device.hpp"
#include "rill/export.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"
#include "rill/types.hpp"

namespace rill {

namespace detail {
class SequenceImpl;
struct Access;  // the engine's own access to the implementation (engine/src/access.hpp)
}

struct SequenceOptions {
  bool timestamps = false;  // per-dispatch GPU timestamps (needs device support)
  std::string label;        // debug label of the whole sequence
};

// Push-constant bytes for Dispatch::push. `block` names the struct's type in the kernel when the
// struct is one the kernels share with C++ (rill's own: shaders/include/contract/); the dispatch
// then checks that it is the one the kernel declares. Other bytes are checked by size only.
struct PushConstants {
  PushConstants() = default;
  PushConstants(std::vector<uint8_t> raw) : bytes(std::move(raw)) {}  // NOLINT(google-explicit-constructor)
  std::vector<uint8_t> bytes;
  std::string_view block;
};

struct Dispatch {
  std::string_view kernel;                // registry name, e.g. "util/fill"
  std::vector<const Tensor*> bindings;    // in binding order (binding 0, 1, ...)
  PushConstants push;                     // push-constant bytes; size must match the shader
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::vector<SpecValue> spec;            // overrides of specialization-constant defaults
  std::string_view variant;               // force a variant ("default": the unnamed one); empty: the device's choice
  std::string_view label;                 // debug label and timing name; default: kernel name
  uint64_t flops = 0;                     // work this dispatch does, for profiles (0: not declared)
  uint64_t bytes = 0;                     // bytes it reads and writes, for profiles
};

// The bytes of a trivially copyable struct, for Dispatch::push, with the struct's block name when
// it has one (a contract struct: push_block_name is found by argument-dependent lookup).
template <typename T>
PushConstants push_bytes(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>, "push constants are copied byte for byte");
  PushConstants out;
  out.bytes.resize(sizeof(T));
  std::memcpy(out.bytes.data(), &value, sizeof(T));
  if constexpr (requires { push_block_name(static_cast<const T*>(nullptr)); })
    out.block = push_block_name(static_cast<const T*>(nullptr));
  return out;
}

// Where a download's bytes are found after the sequence has run.
struct DownloadId {
  uint32_t index = 0;
};

struct DispatchTiming {
  std::string label;
  std::string kernel;
  std::string variant;
  std::array<uint32_t, 3> groups{};
  uint64_t flops = 0;  // as declared by the dispatch
  uint64_t bytes = 0;
  // From when the work recorded before it had finished to when it finished: a sequence's dispatches
  // tile its GPU time, none overlapping the next (where a GPU runs two independent dispatches at
  // once, the second's time is what it added).
  double gpu_ms = 0.0;
  double start_ms = 0.0;  // from the first timed dispatch of the submission
  uint32_t pipeline = 0;  // the id of the pipeline it ran, unique in the process (Context::pipeline_statistics)
};

struct SequenceStats {
  uint32_t dispatches = 0;
  uint32_t barriers = 0;  // barriers rill inserted (the trailing one included)
  uint32_t copies = 0;
  uint64_t submissions = 0;
};

class RILL_API Sequence {
 public:
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;
  ~Sequence();

  // Recording. Each call validates its arguments against the kernel registry and the tensors and
  // returns InvalidArgument (recording nothing) when they do not match.
  Status dispatch(const Dispatch& dispatch);
  Status copy(const Tensor& src, const Tensor& dst);  // same size in bytes
  Status fill_zero(const Tensor& dst);
  // The bytes are captured now; the copy to the tensor runs with the sequence, every replay.
  Status upload(const Tensor& dst, std::span<const uint8_t> bytes);
  // The tensor's bytes as they are at this point of the sequence, readable after wait().
  Result<DownloadId> download(const Tensor& src);

  // Ends recording (done by the first submit if not called).
  Status finish();
  // Submits the recorded work `times` times in a row (1 to kMaxReplays), without waiting.
  static constexpr uint32_t kMaxReplays = 1u << 20;
  Status submit(uint32_t times = 1);
  // Waits for every submission of this sequence.
  Status wait();
  // submit(times) then wait().
  Status run(uint32_t times = 1);

  Status read(DownloadId id, std::span<uint8_t> bytes) const;
  Result<std::vector<float>> read_floats(DownloadId id) const;  // f32 or f16 source

  // GPU time of each dispatch in the last completed submission; needs timestamps.
  Result<std::vector<DispatchTiming>> timings() const;
  SequenceStats stats() const;
  const DeviceInfo& device() const;  // the device this sequence records for
  // "cpu" or "gpu": the kernel family ops should tune for (RILL_KERNEL_VARIANT / the option
  // ContextOptions::kernel_variant override the device's own preference).
  std::string_view kernel_preference() const;

 private:
  friend struct detail::Access;
  explicit Sequence(std::unique_ptr<detail::SequenceImpl> impl);
  std::unique_ptr<detail::SequenceImpl> impl_;
};

}  // namespace rill
