// `rill info`: devices, the choice and its reason, capabilities and quirks (text or JSON).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "commands.hpp"
#include "json_text.hpp"
#include "rill/rill.hpp"

namespace rill_cli {
namespace {

std::string version_text(uint32_t v) {
  return std::to_string(v >> 22) + "." + std::to_string((v >> 12) & 0x3ff) + "." + std::to_string(v & 0xfff);
}

// RILL_KERNEL_VARIANT forces a kernel family in every context; the plans shown follow it.
std::string forced_family() {
  const char* env = std::getenv("RILL_KERNEL_VARIANT");
  return env ? env : "";
}

// The plans shown for `d` under the forced choices (a context refuses an invalid plan; so does info)
// and the tuning file's, where it was made on this device with its kernel family (a context plans
// without it otherwise, and `tuned` then says why).
rill::Result<std::vector<rill::KernelPlanLine>> plans_of(const rill::DeviceInfo& d, const InfoArgs& args,
                                                         std::string& tuned) {
  // As a context refuses it, by name (describe_kernel_plans would name the family alone).
  if (const std::string family = forced_family(); !family.empty() && family != "cpu" && family != "gpu")
    return rill::invalid_argument("RILL_KERNEL_VARIANT '" + family + "': the kernel family is cpu or gpu");
  RILL_ASSIGN_OR_RETURN(auto plans, rill::describe_kernel_plans(d, forced_family(), args.kernel_plan));
  tuned.clear();
  if (args.tuning.empty() || !d.usable) return plans;
  auto file = rill::read_tuning_file(args.tuning, d);
  if (!file.is_ok()) {
    tuned = "not used: " + file.status().message();
    return plans;
  }
  const std::string family = plans.empty() ? "" : plans.front().plan;  // the "kernel family" line
  if (file->family != family) {
    tuned = "not used: measured with the " + file->family + " kernels, this device runs the " + family + " kernels";
    return plans;
  }
  tuned = file->kernel_plan.empty() ? "the plan's own choices" : file->kernel_plan;
  return rill::describe_kernel_plans(d, forced_family(), args.kernel_plan, file->kernel_plan);
}

nlohmann::json device_json(const rill::DeviceInfo& d, const std::vector<rill::KernelPlanLine>& plans) {
  const rill::DeviceCaps& c = d.caps;
  nlohmann::json j = {{"index", d.index},
                      {"name", d.name},
                      {"type", rill::device_type_name(d.type)},
                      {"vendor_id", d.vendor_id},
                      {"device_id", d.device_id},
                      {"driver_name", d.driver_name},
                      {"driver_info", d.driver_info},
                      {"api_version", version_text(c.api_version)},
                      {"usable", d.usable},
                      {"quirks", d.quirks},
                      {"limit_profile", d.limit_profile},
                      {"caps",
                       {{"subgroup_size", c.subgroup_size},
                        {"min_subgroup_size", c.min_subgroup_size},
                        {"max_subgroup_size", c.max_subgroup_size},
                        {"subgroup_size_control", c.subgroup_size_control},
                        {"subgroup_arithmetic", c.subgroup_arithmetic},
                        {"subgroup_shuffle", c.subgroup_shuffle},
                        {"storage_buffer_16bit", c.storage_buffer_16bit},
                        {"float16_arithmetic", c.float16_arithmetic},
                        {"storage_buffer_8bit", c.storage_buffer_8bit},
                        {"int8_arithmetic", c.int8_arithmetic},
                        {"rounding_rte_f32", c.rounding_rte_f32},
                        {"shared_memory_bytes", c.shared_memory_bytes},
                        {"unified_memory", c.unified_memory},
                        {"timestamps", c.timestamps},
                        {"timestamp_period_ns", c.timestamp_period_ns},
                        {"pipeline_creation_feedback", c.pipeline_creation_feedback},
                        {"pipeline_statistics", c.pipeline_statistics},
                        {"max_workgroup_size", c.max_workgroup_size},
                        {"max_workgroup_invocations", c.max_workgroup_invocations},
                        {"max_workgroup_count", c.max_workgroup_count},
                        {"max_storage_buffer_range", c.max_storage_buffer_range},
                        {"max_allocation_bytes", c.max_allocation_bytes},
                        {"max_push_constants_bytes", c.max_push_constants_bytes},
                        {"max_storage_buffers_per_stage", c.max_storage_buffers_per_stage},
                        {"max_texel_buffer_elements", c.max_texel_buffer_elements},
                        {"texel_buffer_f32x4", c.texel_buffer_f32x4},
                        {"texel_buffer_f16x4", c.texel_buffer_f16x4},
                        {"texel_buffer_u32x4", c.texel_buffer_u32x4},
                        {"device_local_bytes", c.device_local_bytes}}}};
  if (!d.usable) j["unusable_reason"] = d.unusable_reason;
  j["kernel_plans"] = nlohmann::json::array();
  for (const auto& p : plans) j["kernel_plans"].push_back({{"op", p.op}, {"shape", p.shape}, {"plan", p.plan}});
  return j;
}

// `rill info --plan-keys`: every choice RILL_KERNEL_PLAN can force, from the engine's one table.
int print_plan_keys(bool as_json) {
  const std::vector<rill::KernelPlanKey> keys = rill::kernel_plan_keys();
  if (as_json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& k : keys)
      j.push_back({{"key", k.key}, {"values", k.values}, {"chooses", k.chooses}, {"tunable", k.tunable}});
    std::printf("%s\n", json_text(j).c_str());
    return 0;
  }
  std::printf("kernel plan keys (RILL_KERNEL_PLAN=key=value,...; * marks those rill tune may choose):\n");
  for (const auto& k : keys)
    std::printf("  %s%s = %s\n      %s\n", k.key.c_str(), k.tunable ? "*" : "", k.values.c_str(), k.chooses.c_str());
  return 0;
}

}  // namespace

CLI::App* add_info_command(CLI::App& app, InfoArgs& a) {
  auto* cmd = app.add_subcommand("info", "List Vulkan devices, which one rill picks and why, and their capabilities");
  cmd->add_flag("--json", a.json, "Print JSON instead of text");
  // Checked when info runs, not by CLI11: CLI11 reads the variable for every subcommand's parse, and
  // a bad RILL_LIMIT_PROFILE then failed `rill demo` naming an option demo does not have.
  cmd->add_option("--profile", a.profile,
                  "Show each device as a limit profile would make it, and the kernels rill would pick then")
      ->envname("RILL_LIMIT_PROFILE");
  cmd->add_option("--kernel-plan", a.kernel_plan,
                  "Show the kernel plans under these forced choices (as RILL_KERNEL_PLAN gives a context, "
                  "e.g. la_tile=4,matmul_texel=off); an invalid plan is an error")
      ->envname("RILL_KERNEL_PLAN");
  cmd->add_option("--tuning", a.tuning,
                  "Show the kernel plans as a context given this tuning file (written by rill tune) makes them")
      ->envname("RILL_TUNING");
  cmd->add_flag("--plan-keys", a.plan_keys,
                "List every choice --kernel-plan (RILL_KERNEL_PLAN) can force: its values and what it chooses");
  return cmd;
}

int run_info(const InfoArgs& args) {
  if (args.plan_keys) {
    // The keys alone: an option that shapes the device listing is refused, not ignored (a value that
    // equals its environment variable's came from there: a bad RILL_KERNEL_PLAN is what the keys
    // help to fix).
    for (const auto& [option, value, env] : {std::tuple{"--profile", &args.profile, "RILL_LIMIT_PROFILE"},
                                             std::tuple{"--kernel-plan", &args.kernel_plan, "RILL_KERNEL_PLAN"},
                                             std::tuple{"--tuning", &args.tuning, "RILL_TUNING"}}) {
      const char* from_env = std::getenv(env);
      if (value->empty() || (from_env != nullptr && *value == from_env)) continue;
      std::fprintf(stderr, "rill info: --plan-keys lists the plan keys alone; %s shapes the device listing: give one\n",
                   option);
      return 2;
    }
    return print_plan_keys(args.json);
  }
  if (!args.profile.empty()) {
    std::string known;
    bool found = false;
    for (const auto& p : rill::limit_profiles()) {
      found = found || args.profile == p.name;
      known += std::string(known.empty() ? "" : ", ") + p.name;
    }
    if (!found) {
      std::fprintf(stderr, "rill info: --profile (or RILL_LIMIT_PROFILE): unknown limit profile '%s' (known: %s)\n",
                   args.profile.c_str(), known.c_str());
      return 2;
    }
  }
  auto listing = rill::list_devices();
  if (!listing.is_ok()) {
    std::fprintf(stderr, "rill info: %s\n", listing.status().to_string().c_str());
    return 1;
  }
  rill::DeviceListing& l = listing.value();
  if (!args.profile.empty()) {
    for (auto& d : l.devices) {
      if (auto applied = rill::apply_limit_profile(args.profile, d); !applied.is_ok()) {
        std::fprintf(stderr, "rill info: %s\n", applied.to_string().c_str());
        return 2;
      }
    }
  }
  std::vector<std::vector<rill::KernelPlanLine>> plans;
  std::vector<std::string> tuned(l.devices.size());
  for (size_t i = 0; i < l.devices.size(); ++i) {
    auto p = plans_of(l.devices[i], args, tuned[i]);
    if (!p.is_ok()) {
      std::fprintf(stderr, "rill info: %s\n", p.status().to_string().c_str());
      return 2;
    }
    plans.push_back(std::move(p).value());
  }
  if (args.json) {
    nlohmann::json j = {{"version", RILL_VERSION_STRING}, {"chosen", l.chosen}, {"reason", l.reason},
                        {"devices", nlohmann::json::array()}};
    if (!args.kernel_plan.empty()) j["kernel_plan"] = args.kernel_plan;
    for (size_t i = 0; i < l.devices.size(); ++i) {
      j["devices"].push_back(device_json(l.devices[i], plans[i]));
      if (!args.tuning.empty()) j["devices"].back()["tuning"] = tuned[i];
    }
    if (!args.tuning.empty()) j["tuning_file"] = args.tuning;
    std::printf("%s\n", json_text(j).c_str());
    return l.chosen >= 0 ? 0 : 1;
  }
  std::printf("rill %s\n", RILL_VERSION_STRING);
  for (size_t i = 0; i < l.devices.size(); ++i) {
    const auto& d = l.devices[i];
    const auto& c = d.caps;
    std::printf("%s device %u: %s (%s)%s\n", int(i) == l.chosen ? "*" : " ", d.index, d.name.c_str(),
                rill::device_type_name(d.type), d.usable ? "" : (" - unusable: " + d.unusable_reason).c_str());
    std::printf("    driver %s %s, Vulkan %s, vendor 0x%04x device 0x%04x\n", d.driver_name.c_str(),
                d.driver_info.c_str(), version_text(c.api_version).c_str(), d.vendor_id, d.device_id);
    std::printf(
        "    subgroup %u (%u..%u, arithmetic %s, shuffle %s), shared memory %u B, max workgroup %u invocations\n",
        c.subgroup_size, c.min_subgroup_size, c.max_subgroup_size, c.subgroup_arithmetic ? "yes" : "no",
        c.subgroup_shuffle ? "yes" : "no", c.shared_memory_bytes, c.max_workgroup_invocations);
    std::printf(
        "    f16 storage %s, f16 math %s, int8 storage %s, int8 math %s, f32 rounding declared to nearest even %s\n",
        c.storage_buffer_16bit ? "yes" : "no", c.float16_arithmetic ? "yes" : "no",
        c.storage_buffer_8bit ? "yes" : "no", c.int8_arithmetic ? "yes" : "no", c.rounding_rte_f32 ? "yes" : "no");
    const auto& coop = c.cooperative_matrix_f16;
    if (coop[0] != 0)
      std::printf("    cooperative matrices: f16 x f16 + f32, %u x %u x %u (VK_NV_cooperative_matrix)\n", coop[0],
                  coop[1], coop[2]);
    else
      std::printf("    cooperative matrices: none\n");
    std::printf("    memory %.0f MiB device-local%s, max allocation %.0f MiB, max storage range %.0f MiB\n",
                c.device_local_bytes / 1048576.0, c.unified_memory ? " (unified, mapped directly)" : "",
                c.max_allocation_bytes / 1048576.0, c.max_storage_buffer_range / 1048576.0);
    std::printf("    timestamps %s, pipeline creation feedback %s, compiler statistics %s\n",
                c.timestamps ? "yes" : "no", c.pipeline_creation_feedback ? "yes" : "no",
                c.pipeline_statistics ? "yes" : "no");
    std::string quirks;
    for (const auto& q : d.quirks) quirks += (quirks.empty() ? "" : ", ") + q;
    std::printf("    quirks: %s\n", quirks.empty() ? "none" : quirks.c_str());
    if (!d.limit_profile.empty()) std::printf("    limit profile: %s (the limits above are its)\n", d.limit_profile.c_str());
    if (!d.usable) continue;
    std::printf("    kernel plans%s%s%s%s%s:\n", args.kernel_plan.empty() ? "" : " (forced: ", args.kernel_plan.c_str(),
                args.kernel_plan.empty() ? "" : ")", tuned[i].empty() ? "" : "; tuning file: ", tuned[i].c_str());
    int op_width = 0, shape_width = 0;
    for (const auto& p : plans[i]) {
      op_width = std::max(op_width, int(p.op.size()));
      shape_width = std::max(shape_width, int(p.shape.size()));
    }
    for (const auto& p : plans[i])
      std::printf("      %-*s %-*s %s\n", op_width, p.op.c_str(), shape_width, p.shape.c_str(), p.plan.c_str());
  }
  std::printf("chosen: %s\n", l.reason.c_str());
  return l.chosen >= 0 ? 0 : 1;
}

}  // namespace rill_cli
