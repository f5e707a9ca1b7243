// What every task set must be, however it was made (loaded, sampled, built by hand), before it is
// saved or trained on.
#pragma once

#include <string>

#include "rill/icl.hpp"

namespace rill::icl::detail {

// InvalidArgument (OutOfRange past rill's limits) starting with `where` unless: d in [1, 1024], n in
// [1, 65536], 1 to 2^24 - 1 tasks; the arrays sized for them; every value finite; sigmas >= 0; each
// query token's label slot 0 (the model would read its target).
Status check_task_set_contents(const TaskSet& set, const std::string& where);

}  // namespace rill::icl::detail
