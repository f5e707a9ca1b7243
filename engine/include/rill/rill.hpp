// rill C++ API umbrella header.
#pragma once

#include "rill/context.hpp"
#include "rill/device.hpp"
#include "rill/files.hpp"
#include "rill/half.hpp"
#include "rill/icl.hpp"
#include "rill/ops/block_attention.hpp"
#include "rill/ops/elementwise.hpp"
#include "rill/ops/linear_attention.hpp"
#include "rill/ops/matmul.hpp"
#include "rill/ops/rmsnorm.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"
#include "rill/tuning.hpp"
#include "rill/version.hpp"
