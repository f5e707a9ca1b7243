// The C API's training calls (rill_icl_train, rill_icl_grid_train) keep step records a chunk at a
// time, copied out and dropped: a long run holds 16 bytes per step of one chunk, not of the run.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace rill::capi {

// About 64K steps; tests lower it to cross chunk boundaries in a few steps.
inline std::atomic<int64_t> record_chunk_steps{int64_t(1) << 16};

// Whole runs of read_every steps (a read of the losses ends each run), for `models` models trained
// together: their records together stay near the chunk (a grid of 2000 models kept 2 GiB a chunk).
inline int64_t record_chunk(int64_t read_every, int64_t models = 1) {
  return read_every * std::max<int64_t>(1, record_chunk_steps.load() / std::max<int64_t>(models, 1) / read_every);
}

}  // namespace rill::capi
