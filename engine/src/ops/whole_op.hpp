// The guard of every public op: a call records all of its commands into the sequence, or fails
// leaving the sequence as it was, or fails and breaks the sequence. Never half an op to submit.
#pragma once

#include <string>

#include "access.hpp"
#include "core/host_memory_guard.hpp"
#include "rill/sequence.hpp"
#include "sequence_impl.hpp"

namespace rill::ops::detail {

// Runs op `op`'s checks and recording (`record`, returning a Status). Running out of host memory is
// ResourceExhausted naming `op`, never an exception. An op that fails after it recorded part of its
// commands (a state zeroed, then a workspace that did not fit in device memory) breaks the sequence:
// finish() and submit() then refuse it, naming why, where it would have run the part.
template <typename F>
Status whole_op(Sequence& seq, const char* op, F&& record) {
  rill::detail::SequenceImpl& s = rill::detail::Access::impl(seq);
  const uint64_t before = s.commands_recorded();
  Status status = rill::detail::host_memory_guarded(op, record);  // not const: returned by a move
  if (status.is_ok() || s.commands_recorded() == before || s.state != rill::detail::SequenceImpl::State::kRecording)
    return status;
  try {
    s.break_with(Status(status.code(), std::string(op) + " failed after recording part of its work (" +
                                           status.message() + "): make a new sequence"));
  } catch (const std::bad_alloc&) {
    s.break_with(status);
  }
  return status;
}

}  // namespace rill::ops::detail
