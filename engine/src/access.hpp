// The engine's access to what the public classes keep private (their implementations and their
// construction from one). Only engine code and tests include this; applications never see it, so
// the public headers carry no hooks for it beyond one friend declaration.
#pragma once

#include <memory>
#include <utility>

#include "rill/context.hpp"
#include "rill/sequence.hpp"
#include "rill/tensor.hpp"

namespace rill::detail {

struct Access {
  static ContextImpl& impl(const Context& context) { return *context.impl_; }
  static const std::shared_ptr<ContextImpl>& shared(const Context& context) { return context.impl_; }
  static Context context(std::shared_ptr<ContextImpl> impl) { return Context(std::move(impl)); }
  // Another handle on the same context, for objects that must keep it alive (trainers, models).
  static Context share(const Context& context) { return Context(context.impl_); }

  static SequenceImpl& impl(const Sequence& sequence) { return *sequence.impl_; }
  static Sequence sequence(std::unique_ptr<SequenceImpl> impl);  // sequence.cpp (needs the whole SequenceImpl)

  static const std::shared_ptr<TensorStorage>& storage(const Tensor& tensor) { return tensor.storage_; }
  static Tensor tensor(std::shared_ptr<TensorStorage> storage) { return Tensor(std::move(storage)); }

  // The tokens a text stream keeps to decode the next push with (bounded, whatever is pushed).
  template <typename Stream>
  static size_t window_tokens(const Stream& stream) {
    return stream.window_.size();
  }

  // The implementation of another class that befriends Access (icl::Trainer, for its tests).
  template <typename Owner>
  static auto& impl_of(Owner& owner) {
    return *owner.impl_;
  }
};

}  // namespace rill::detail
