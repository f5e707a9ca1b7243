// Tuning files: the kernel-plan choices `rill tune` measured fastest for a device's jobs, which a
// context then plans with where they fit (ContextOptions::tuning_path, RILL_TUNING).
//
// A plan's own choices come from the device's properties, and for a GPU no session has measured
// (a phone's, an integrated one) they are informed guesses. `rill tune` times the alternatives the
// plan can force (tile depths, decoding grids, ICL layer groupings, ...) on the device itself and
// keeps those that beat the plan's own. A context given the file takes each tuned choice where it
// fits the device and the shape, and plans as without it elsewhere; a forced choice
// (ContextOptions::kernel_plan) wins over a tuned one.
#pragma once

#include <string>
#include <vector>

#include "rill/device.hpp"
#include "rill/export.hpp"
#include "rill/status.hpp"

namespace rill {

// One timing `rill tune` took: a job ("lm prefill", "lm decode", "icl step") under a kernel plan
// ("" for the plan's own choices), its median milliseconds.
struct TuningMeasurement {
  std::string job;
  std::string kernel_plan;
  double ms = 0.0;
};

struct TuningFile {
  // The chosen plan, "key=value,..." as ContextOptions::kernel_plan takes it, tunable keys only (those
  // `rill info --plan-keys` and rill::kernel_plan_keys() mark so; matmul_coop off or native). Empty:
  // the plan's own choices were fastest.
  std::string kernel_plan;
  std::string family;  // the kernel family it was measured with ("cpu" or "gpu")
  std::vector<TuningMeasurement> measurements;
};

// Writes `tuning` for `device` to `path` atomically (JSON; the device's name, vendor and device
// ids, driver version and limit profile identify it). InvalidArgument for a plan with a key that
// is not tunable or a value the plan refuses.
RILL_API Status write_tuning_file(const std::string& path, const DeviceInfo& device, const TuningFile& tuning);

// Reads a tuning file as untrusted input: NotFound where there is none, DataLoss for a malformed
// one, OutOfRange past 1 MiB, FailedPrecondition for a file made on another device, driver or limit
// profile, InvalidArgument for a plan that is not tunable or that the plan refuses.
RILL_API Result<TuningFile> read_tuning_file(const std::string& path, const DeviceInfo& device);

}  // namespace rill
