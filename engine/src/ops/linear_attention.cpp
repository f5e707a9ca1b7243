// Linear attention dispatch: shape rules, chunk splitting over bounded dispatches, cost declarations.
#include "rill/ops/linear_attention.hpp"

#include <algorithm>

#include "kernel_plan.hpp"
#include "ops/op_common.hpp"
#include "ops/whole_op.hpp"
#include "vk/kernel_contracts.hpp"
#include "vk/spec_name.hpp"

namespace rill::ops {

static_assert(uint32_t(FeatureMap::kIdentity) == gpu::kFeatureIdentity &&
              uint32_t(FeatureMap::kElu1) == gpu::kFeatureElu1 && uint32_t(FeatureMap::kRelu) == gpu::kFeatureRelu &&
              uint32_t(FeatureMap::kSilu) == gpu::kFeatureSilu);

namespace {

constexpr const char* kLinearAttentionOp = "linear_attention";
constexpr uint32_t kWorkgroup = 64;

struct Dims {
  uint32_t batch, heads, n, dk, dv;
};

// The forward ops take an f32 o for f16 q, k and v (f32_output): without decay each output row
// sums over every earlier position, which outgrows f16's 65504 where f32 does not.
// `o` is the output of the forward ops and the backward's d_o; `state` the forward's state and the
// backward's scratch: `o_role` and `state_role` name them in errors.
Result<Dims> check_shapes(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor* state,
                          const LinearAttentionOptions& opt, bool f32_output, const char* o_role = "o",
                          const char* state_role = "state") {
  RILL_RETURN_IF_ERROR(detail::float_suffix(q, kLinearAttentionOp).status());
  if (q.shape().size() != 4) return invalid_argument("linear_attention: q " + q.describe() + " must be [B, H, N, Dk]");
  RILL_RETURN_IF_ERROR(detail::require_same_shape(q, k, kLinearAttentionOp, "k"));
  if (!v.valid() || v.shape().size() != 4 || v.dtype() != q.dtype() ||
      !std::equal(v.shape().begin(), v.shape().begin() + 3, q.shape().begin()))
    return invalid_argument("linear_attention: v " + v.describe() + " must be [B, H, N, Dv] like " + q.describe());
  if (f32_output && q.dtype() == DType::kF16 && o.valid() && o.dtype() == DType::kF32) {
    if (o.shape() != v.shape())
      return invalid_argument(std::string("linear_attention: ") + o_role + " " + o.describe() +
                              " must have the shape of " + v.describe());
  } else {
    RILL_RETURN_IF_ERROR(detail::require_same_shape(v, o, kLinearAttentionOp, o_role));
  }
  const auto& s = q.shape();
  if (q.element_count() > UINT32_MAX || v.element_count() > UINT32_MAX)
    return out_of_range("linear_attention: more than 2^32 elements in q or v");
  Dims d{uint32_t(s[0]), uint32_t(s[1]), uint32_t(s[2]), uint32_t(s[3]), uint32_t(v.shape()[3])};
  if (uint64_t(d.batch) * d.heads > 65535) return out_of_range("linear_attention: B * H must be <= 65535");
  if (state) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*state, DType::kF32, kLinearAttentionOp, state_role));
    if (state->shape() != std::vector<int64_t>{s[0], s[1], s[3], v.shape()[3]})
      return invalid_argument(std::string("linear_attention: ") + state_role + " " + state->describe() +
                              " must be [B, H, Dk, Dv] f32");
  }
  if (opt.decay) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*opt.decay, DType::kF32, kLinearAttentionOp, "decay"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*opt.decay, d.heads, kLinearAttentionOp, "decay"));
    if (!opt.causal) return invalid_argument("linear_attention: decay applies to causal attention only");
  }
  return d;
}

Status check_chunk(const Sequence& seq, const LinearAttentionOptions& opt) {
  // The chunk's C x C scores live in shared memory.
  if (opt.chunk < 1 || opt.chunk > 64 || uint64_t(opt.chunk) * opt.chunk * 4 > seq.device().caps.shared_memory_bytes)
    return invalid_argument("linear_attention: chunk must be 1..64 and its scores fit in shared memory");
  return Status::ok();
}

plan::LinearAttentionShape shape_of(const Dims& d, const LinearAttentionOptions& opt) {
  return {.heads = uint64_t(d.batch) * d.heads,
          .n = d.n,
          .dk = d.dk,
          .dv = d.dv,
          .chunk = opt.chunk,
          .chunks_per_dispatch = opt.chunks_per_dispatch,
          .causal = opt.causal};
}

// The chunk and the chunks per dispatch of the serial chunked kernels (the plan bounds each
// dispatch's length and may shrink the chunk).
Result<plan::SerialChunks> serial_chunks(const Sequence& seq, const Dims& d, const LinearAttentionOptions& opt) {
  return plan::linear_attention_serial(plan::traits_of(seq), shape_of(d, opt));
}

// The kernel suffix of a kernel reading `in` and writing `out`: "_o32" after the storage type's
// for f16 inputs with an f32 output (the forward's f32_output).
std::string out_suffix(const std::string& suffix, const Tensor& in, const Tensor& out) {
  return in.dtype() == DType::kF16 && out.dtype() == DType::kF32 ? suffix + "_o32" : suffix;
}

std::vector<SpecValue> spec_for(const LinearAttentionOptions& opt, uint32_t workgroup = kWorkgroup) {
  return {gpu::spec("WG_SIZE", workgroup), gpu::spec("FEATURE", uint32_t(opt.feature_map)),
          gpu::spec("HAS_DECAY", opt.decay != nullptr)};
}

}  // namespace

namespace {

// The operands of the generalised form the scan and the parallel passes compute (la_par_common.glsl):
//   out_t = sum_{s<=t} lambda^(t-s) (f(a_t) . g(b_s)) h(c_s), times phi'(x_t) with grad_scale,
// forward in time or, with reverse, backward (non-causal: over every s). a, b: [B, H, N, dk];
// c, out (and x): [B, H, N, dv].
struct Form {
  const Tensor *a, *b, *c, *x = nullptr, *out;
  uint32_t dk, dv;  // of a and b, of c and out
  bool phi_a = true, phi_b = true, phi_c = false, reverse = false;
};

// CPU drivers: a scan with the state columns in registers (la_scan_cpu.glsl says why), in `mode`
// (gpu::kLaForward*: causal, state only, apply).
Status register_scan(Sequence& seq, const Dims& d, const std::string& suffix, const Form& f, const Tensor& state,
                     const LinearAttentionOptions& opt, const plan::LinearAttentionPlan& p, uint32_t mode) {
  const uint32_t sg = p.workgroup, cj = p.columns_per_lane;
  const uint64_t bh = uint64_t(d.batch) * d.heads, es = dtype_size(f.a->dtype());
  const uint64_t per = p.positions_per_dispatch;
  const bool update = mode != gpu::kLaForwardApply, output = mode != gpu::kLaForwardState;
  // Per position: the update and the output are Dk Dv FMAs each; reads of b and c, of a (and x), writes of out.
  const uint64_t flops = 2ull * f.dk * f.dv * ((update ? 1 : 0) + (output ? 1 : 0));
  const uint64_t row_bytes = es * ((update ? f.dk + f.dv : 0) + (output ? f.dk + (f.x ? 1 : 0) * f.dv : 0)) +
                             (output ? dtype_size(f.out->dtype()) * f.dv : 0);
  const std::vector<SpecValue> spec = {gpu::spec("SG", sg),
                                       gpu::spec("FEATURE", uint32_t(opt.feature_map)),
                                       gpu::spec("HAS_DECAY", opt.decay != nullptr),
                                       gpu::spec("DK", f.dk),
                                       gpu::spec("CJ", cj),
                                       gpu::spec("MODE", mode),
                                       gpu::spec("PHI_A", f.phi_a),
                                       gpu::spec("PHI_B", f.phi_b),
                                       gpu::spec("PHI_C", f.phi_c),
                                       gpu::spec("REVERSE", f.reverse),
                                       gpu::spec("GRAD_SCALE", f.x != nullptr)};
  const std::string kernel =
      detail::register_kernel("linear_attention/la_scan_cpu", p.vector_width, out_suffix(suffix, *f.a, *f.out));
  for (uint64_t first = 0; first < d.n; first += per) {
    const uint32_t count = uint32_t(std::min<uint64_t>(per, d.n - first));
    const gpu::LaScanPush push{d.heads, d.n, f.dk, f.dv, uint32_t(first), count};
    RILL_RETURN_IF_ERROR(
        seq.dispatch({.kernel = kernel,
                      .bindings = {f.a, f.b, f.c, opt.decay ? opt.decay : f.a, &state, f.out, f.x ? f.x : f.c},
                      .push = push_bytes(push),
                      .groups = {uint32_t(bh), (f.dv + sg * cj - 1) / (sg * cj), 1},
                      .spec = spec,
                      .flops = flops * count * bh,
                      .bytes = bh * (row_bytes * count + 8ull * f.dk * f.dv)}));
  }
  return Status::ok();
}

// The form over every position with the register scan: causal in one pass; non-causal as the whole
// sequence's state, then every output from it.
Status register_scan_form(Sequence& seq, const Dims& d, const std::string& suffix, const Form& f, const Tensor& state,
                          const LinearAttentionOptions& opt, const plan::LinearAttentionPlan& p) {
  if (opt.causal) return register_scan(seq, d, suffix, f, state, opt, p, gpu::kLaForwardCausal);
  RILL_RETURN_IF_ERROR(register_scan(seq, d, suffix, f, state, opt, p, gpu::kLaForwardState));
  return register_scan(seq, d, suffix, f, state, opt, p, gpu::kLaForwardApply);
}

// GPUs: the form parallel over (chunk, head) in windows of chunks. Per window three passes: each
// chunk's own state into the workspace, a scan that turns those into the state before each chunk
// (and carries `state` past the window), then every chunk's outputs. Non-causal (opt.causal false):
// the first two passes over every window leave the whole sequence's state in `state`, then every
// chunk's outputs read that one state. `transposed`, when given, is a second form whose states are
// the transposes of f's (same decay and direction): only its outputs run, reading f's states.
Status parallel_chunks(Sequence& seq, const Dims& d, const std::string& suffix, const Form& f, const Tensor& state,
                       const LinearAttentionOptions& opt, const plan::LinearAttentionPlan& p,
                       const Form* transposed = nullptr) {
  const uint64_t bh = uint64_t(d.batch) * d.heads, elements = uint64_t(f.dk) * f.dv, es = dtype_size(f.a->dtype());
  const uint32_t chunks = uint32_t((uint64_t(d.n) + p.chunk - 1) / p.chunk);
  // Per window: the chunks' states from 0 (each chunk's own, or causal with spans its state within
  // its span), then with spans each span's state from states_base (la_par_common.glsl).
  const bool local_prefixes = opt.causal && p.span > 1;
  auto spans_of = [&](uint64_t count) { return (count + p.span - 1) / p.span; };
  const uint64_t workspace_states = (local_prefixes ? p.chunks_per_dispatch : 0) + spans_of(p.chunks_per_dispatch);
  RILL_ASSIGN_OR_RETURN(const Tensor* chunk_states,
                        detail::workspace(seq, bh * workspace_states * elements, kLinearAttentionOp));
  const Tensor& decay = opt.decay ? *opt.decay : *f.a;  // bound but unread without decay
  // The states pass's and the scan's constants; the scan's chunk is a span (SPAN chunks' positions).
  auto spec = spec_for(opt, p.workgroup);
  spec.insert(spec.end(), {gpu::spec("PHI_A", f.phi_a), gpu::spec("PHI_B", f.phi_b), gpu::spec("PHI_C", f.phi_c),
                           gpu::spec("REVERSE", f.reverse), gpu::spec("TILE", p.tile), gpu::spec("DK", f.dk),
                           gpu::spec("DV", f.dv), gpu::spec("SPAN", p.span)});
  std::vector<SpecValue> states_spec = spec, scan_spec = spec;
  states_spec.insert(states_spec.end(), {gpu::spec("CHUNK", p.chunk), gpu::spec("LOCAL_PREFIXES", local_prefixes)});
  scan_spec.insert(scan_spec.end(), {gpu::spec("CHUNK", p.chunk * p.span), gpu::spec("GROUPS", p.scan_groups)});
  auto output_spec_of = [&](const Form& form, bool state_transposed) {
    std::vector<SpecValue> out = spec_for(opt, p.output_workgroup);
    out.insert(out.end(),
               {gpu::spec("PHI_A", form.phi_a), gpu::spec("PHI_B", form.phi_b), gpu::spec("PHI_C", form.phi_c),
                gpu::spec("REVERSE", form.reverse), gpu::spec("CHUNK", p.chunk), gpu::spec("TILE", p.tile),
                gpu::spec("GRAD_SCALE", form.x != nullptr), gpu::spec("CAUSAL", opt.causal),
                gpu::spec("STATE_TRANSPOSED", state_transposed), gpu::spec("DK", form.dk), gpu::spec("DV", form.dv),
                gpu::spec("SPAN", p.span), gpu::spec("GROUPED_COLUMNS", p.grouped_columns),
                gpu::spec("FUSE_SCORES", p.fused_scores), gpu::spec("PAIRED_ROWS", p.paired_rows)});
    return out;
  };
  // The scan: workgroups of workgroup / scan_groups elements, each invocation one run of chunks
  // (or of spans).
  const uint32_t scan_elements = p.workgroup / p.scan_groups;
  const uint32_t scan_groups = uint32_t((elements + scan_elements - 1) / scan_elements);
  struct Window {
    gpu::LaWindowPush push;
    uint64_t positions;
  };
  auto window = [&](uint32_t first) {
    const uint32_t count = std::min(p.chunks_per_dispatch, chunks - first);
    const uint32_t states_base = local_prefixes ? uint32_t(bh * count * elements) : 0;
    return Window{{d.heads, d.n, f.dk, f.dv, first, count, states_base},
                  std::min<uint64_t>(uint64_t(count) * p.chunk, d.n - uint64_t(first) * p.chunk)};
  };
  auto states_and_scan = [&](const Window& w) -> Status {
    const uint32_t count = w.push.window, spans = uint32_t(spans_of(count));
    const uint64_t written = (local_prefixes ? count : 0) + spans;
    RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "linear_attention/la_par_states_" + suffix,
                                       .bindings = {f.b, f.c, &decay, chunk_states},
                                       .push = push_bytes(w.push),
                                       .groups = {spans, uint32_t(bh), 1},
                                       .spec = states_spec,
                                       .flops = 2 * bh * w.positions * elements,
                                       .bytes = bh * (es * w.positions * (f.dk + f.dv) + 4 * written * elements)}));
    // The scan over the window's spans (its chunks when SPAN is 1); the window starts at a multiple
    // of SPAN chunks (the plan's window is a whole number of spans).
    gpu::LaWindowPush scan_push = w.push;
    scan_push.first_chunk = w.push.first_chunk / p.span;
    scan_push.window = spans;
    return seq.dispatch({.kernel = "linear_attention/la_par_scan",
                         .bindings = {&decay, chunk_states, &state},
                         .push = push_bytes(scan_push),
                         .groups = {scan_groups, uint32_t(bh), 1},
                         .spec = scan_spec,
                         .flops = 2 * bh * spans * elements,
                         .bytes = bh * (8 * spans * elements + 8 * elements)});
  };
  auto form_outputs = [&](const Window& w, const Form& o, bool state_transposed) -> Status {
    const uint32_t count = w.push.window;
    gpu::LaWindowPush push = w.push;
    push.dk = o.dk;
    push.dv = o.dv;
    // Per position: a P (2 dk dv FLOPs) and, causal, on average (C + 1) / 2 scores and value rows.
    const uint64_t intra = opt.causal ? uint64_t(p.chunk + 1) * (o.dk + o.dv) : 0;
    const uint64_t state_reads = opt.causal ? (p.span > 1 ? 2 : 1) * count : 1;
    return seq.dispatch(
        {.kernel = "linear_attention/la_par_output_" + out_suffix(suffix, *o.a, *o.out),
         .bindings = {o.a, o.b, o.c, &decay, opt.causal ? chunk_states : &state, o.x ? o.x : o.c, o.out},
         .push = push_bytes(push),
         .groups = {count, uint32_t(bh), 1},
         .spec = output_spec_of(o, state_transposed),
         .flops = bh * w.positions * (2 * elements + intra),
         .bytes =
             bh * (w.positions * (es * (opt.causal ? 2 * o.dk + (o.x ? 2 : 1) * o.dv : o.dk + (o.x ? 1 : 0) * o.dv) +
                                  dtype_size(o.out->dtype()) * o.dv) +
                   4 * state_reads * elements)});
  };
  auto outputs = [&](const Window& w) -> Status {
    RILL_RETURN_IF_ERROR(form_outputs(w, f, false));
    return transposed ? form_outputs(w, *transposed, true) : Status::ok();
  };
  for (uint32_t first = 0; first < chunks; first += p.chunks_per_dispatch) {
    const Window w = window(first);
    RILL_RETURN_IF_ERROR(states_and_scan(w));
    if (opt.causal) RILL_RETURN_IF_ERROR(outputs(w));
  }
  if (!opt.causal)
    for (uint32_t first = 0; first < chunks; first += p.chunks_per_dispatch)
      RILL_RETURN_IF_ERROR(outputs(window(first)));
  return Status::ok();
}

// Dispatches of the forward kernel in `mode` (gpu::kLaForward*: causal, state only, apply) over all
// chunks.
Status forward_scan(Sequence& seq, const Dims& d, const std::string& suffix, const Tensor& q, const Tensor& k,
                    const Tensor& v, const Tensor& o, const Tensor& state, const LinearAttentionOptions& opt,
                    uint32_t mode) {
  RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
  plan::SerialChunks serial;
  if (mode == gpu::kLaForwardCausal) {
    RILL_ASSIGN_OR_RETURN(const plan::LinearAttentionPlan p,
                          plan::linear_attention_forward(plan::traits_of(seq), shape_of(d, opt)));
    if (p.algorithm == plan::LinearAttentionAlgorithm::kRegisterScan)
      return register_scan(seq, d, suffix, {.a = &q, .b = &k, .c = &v, .out = &o, .dk = d.dk, .dv = d.dv}, state, opt,
                           p, gpu::kLaForwardCausal);
    if (p.algorithm == plan::LinearAttentionAlgorithm::kChunkedParallel)
      return parallel_chunks(seq, d, suffix, {.a = &q, .b = &k, .c = &v, .out = &o, .dk = d.dk, .dv = d.dv}, state, opt,
                             p);
    serial = {p.chunk, p.chunks_per_dispatch};
  } else {
    RILL_ASSIGN_OR_RETURN(serial, serial_chunks(seq, d, opt));
  }
  const uint32_t chunk = serial.chunk, per = serial.chunks_per_dispatch;
  const uint32_t chunks = uint32_t((uint64_t(d.n) + chunk - 1) / chunk);  // 64 bits: N near 2^32 wrapped to 0
  const uint64_t es = dtype_size(q.dtype()), bh = uint64_t(d.batch) * d.heads;
  for (uint32_t first = 0; first < chunks; first += per) {
    const uint32_t count = std::min(per, chunks - first);
    const uint64_t positions = std::min<uint64_t>(uint64_t(count) * chunk, d.n - uint64_t(first) * chunk);
    // Per position: inter q S and update k^T v (2 Dk Dv FMAs each), intra ~C/2 (Dk + Dv) FMAs.
    uint64_t flops = 0;
    if (mode != gpu::kLaForwardApply) flops += 2ull * d.dk * d.dv;
    if (mode != gpu::kLaForwardState) flops += 2ull * d.dk * d.dv;
    if (mode == gpu::kLaForwardCausal) flops += uint64_t(chunk) * (d.dk + d.dv);
    const uint64_t bytes = es * positions * ((mode == gpu::kLaForwardApply ? 1 : 2) * d.dk + d.dv) +
                           (mode == gpu::kLaForwardState ? 0 : dtype_size(o.dtype()) * positions * d.dv) +
                           8ull * d.dk * d.dv;
    const gpu::LaChunkPush push{d.heads, d.n, d.dk, d.dv, first, count};
    auto spec = spec_for(opt);
    spec.push_back(gpu::spec("CHUNK", chunk));
    spec.push_back(gpu::spec("MODE", mode));
    RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "linear_attention/la_chunked_" + out_suffix(suffix, q, o),
                                       .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &state, &o},
                                       .push = push_bytes(push),
                                       .groups = {uint32_t(bh), 1, 1},
                                       .spec = spec,
                                       .flops = flops * positions * bh,
                                       .bytes = bytes * bh}));
  }
  return Status::ok();
}

// state = phi(K)^T V over the whole sequence (`unused_out` is bound but not written).
Status linear_attention_state(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& unused_out, const Tensor& state, const LinearAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kLinearAttentionOp));
  const auto& s = q.shape();
  const Dims d{uint32_t(s[0]), uint32_t(s[1]), uint32_t(s[2]), uint32_t(s[3]), uint32_t(v.shape()[3])};
  if (!opt.continue_state) RILL_RETURN_IF_ERROR(seq.fill_zero(state));
  return forward_scan(seq, d, suffix, q, k, v, unused_out, state, opt, gpu::kLaForwardState);
}

}  // namespace

Status linear_attention_forward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                const Tensor& state, const LinearAttentionOptions& opt) {
  return detail::whole_op(seq, "linear_attention_forward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, &state, opt, true));
    RILL_RETURN_IF_ERROR(detail::require_disjoint(
        {{&o, "o"}, {&state, "state"}}, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {opt.decay, "decay"}}, kLinearAttentionOp));
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kLinearAttentionOp));
    RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
    if (!opt.continue_state) RILL_RETURN_IF_ERROR(seq.fill_zero(state));
    if (opt.causal) return forward_scan(seq, d, suffix, q, k, v, o, state, opt, gpu::kLaForwardCausal);
    RILL_ASSIGN_OR_RETURN(const plan::LinearAttentionPlan p,
                          plan::linear_attention_noncausal(plan::traits_of(seq), shape_of(d, opt)));
    const Form form{.a = &q, .b = &k, .c = &v, .out = &o, .dk = d.dk, .dv = d.dv};
    if (p.algorithm == plan::LinearAttentionAlgorithm::kRegisterScan)
      return register_scan_form(seq, d, suffix, form, state, opt, p);
    if (p.algorithm == plan::LinearAttentionAlgorithm::kChunkedParallel)
      return parallel_chunks(seq, d, suffix, form, state, opt, p);
    RILL_RETURN_IF_ERROR(forward_scan(seq, d, suffix, q, k, v, o, state, opt, gpu::kLaForwardState));
    return forward_scan(seq, d, suffix, q, k, v, o, state, opt, gpu::kLaForwardApply);
  });
}

Status linear_attention_backward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_o,
                                 const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& scratch,
                                 const LinearAttentionOptions& opt) {
  return detail::whole_op(seq, "linear_attention_backward", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, d_o, &scratch, opt, false, "d_o", "scratch"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dq, kLinearAttentionOp, "dq"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dk, kLinearAttentionOp, "dk"));
    RILL_RETURN_IF_ERROR(detail::require_same_shape(v, dv, kLinearAttentionOp, "dv"));
    RILL_RETURN_IF_ERROR(detail::require_disjoint(
        {{&dq, "dq"}, {&dk, "dk"}, {&dv, "dv"}, {&scratch, "scratch"}},
        {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&d_o, "d_o"}, {opt.decay, "decay"}}, kLinearAttentionOp));
    if (opt.continue_state)
      return unimplemented("linear_attention_backward: a non-zero initial state is not supported");
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kLinearAttentionOp));
    RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
    RILL_ASSIGN_OR_RETURN(const plan::LinearAttentionPlan p,
                          plan::linear_attention_backward(plan::traits_of(seq), shape_of(d, opt)));
    if (p.algorithm != plan::LinearAttentionAlgorithm::kChunkedSerial) {
      // With a_ts = lambda^(t-s) (do_t . v_s), b_ts = lambda^(t-s) (phi(q_t) . phi(k_s)), s <= t:
      //   dq_t = phi'(q_t) sum_{s<=t} a_ts phi(k_s): the causal form of (do, v, phi(k)), forward in time;
      //   dk_s = phi'(k_s) sum_{t>=s} a_ts phi(q_t): the form of (v, do, phi(q)), backward in time;
      //   dv_s = sum_{t>=s} b_ts do_t: the form of (phi(k), phi(q), do), backward in time.
      // Non-causal, the same forms with every s and t (and no decay). Each starts from a zero state in
      // `scratch` ([Dv, Dk] for the first two: the same size).
      const Form forms[] = {
          {.a = &d_o,
           .b = &v,
           .c = &k,
           .x = &q,
           .out = &dq,
           .dk = d.dv,
           .dv = d.dk,
           .phi_a = false,
           .phi_b = false,
           .phi_c = true},
          {.a = &v,
           .b = &d_o,
           .c = &q,
           .x = &k,
           .out = &dk,
           .dk = d.dv,
           .dv = d.dk,
           .phi_a = false,
           .phi_b = false,
           .phi_c = true,
           .reverse = true},
          {.a = &k, .b = &q, .c = &d_o, .out = &dv, .dk = d.dk, .dv = d.dv, .reverse = true},
      };
      if (p.algorithm == plan::LinearAttentionAlgorithm::kRegisterScan) {
        for (const Form& f : forms) {
          RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
          RILL_RETURN_IF_ERROR(register_scan_form(seq, d, suffix, f, scratch, opt, p));
        }
        return Status::ok();
      }
      // The dk and dv forms run backward in time over states that are each other's transposes
      // (sum do^T phi(q) and sum phi(q)^T do): one set of chunk states and one scan serve both.
      RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
      RILL_RETURN_IF_ERROR(parallel_chunks(seq, d, suffix, forms[0], scratch, opt, p));
      RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
      return parallel_chunks(seq, d, suffix, forms[1], scratch, opt, p, &forms[2]);
    }
    // The serial chunked kernel: its own scans.
    RILL_ASSIGN_OR_RETURN(const plan::SerialChunks serial, serial_chunks(seq, d, opt));
    const uint32_t chunk = serial.chunk, per = serial.chunks_per_dispatch;
    const uint32_t chunks = uint32_t((uint64_t(d.n) + chunk - 1) / chunk);  // 64 bits: N near 2^32 wrapped to 0
    const uint64_t es = dtype_size(q.dtype()), bh = uint64_t(d.batch) * d.heads;
    // One scan of the backward kernel in `mode` (gpu::kLaBackward*), over every chunk range (forward in
    // time for dq, else backward).
    auto scan = [&](uint32_t mode, const Tensor& out) -> Status {
      const uint32_t ranges = uint32_t((uint64_t(chunks) + per - 1) / per);
      for (uint32_t r = 0; r < ranges; ++r) {
        const uint32_t index = mode == gpu::kLaBackwardDq ? r : ranges - 1 - r;
        const uint32_t first = index * per, count = std::min(per, chunks - first);
        const uint64_t positions = std::min<uint64_t>(uint64_t(count) * chunk, d.n - uint64_t(first) * chunk);
        const gpu::LaChunkPush push{d.heads, d.n, d.dk, d.dv, first, count};
        auto spec = spec_for(opt);
        spec.push_back(gpu::spec("CHUNK", chunk));
        spec.push_back(gpu::spec("MODE", mode));
        spec.push_back(gpu::spec("CAUSAL", opt.causal));
        RILL_RETURN_IF_ERROR(seq.dispatch(
            {.kernel = "linear_attention/la_chunked_bwd_" + suffix,
             .bindings = {&q, &k, &v, &d_o, opt.decay ? opt.decay : &q, &scratch, &out},
             .push = push_bytes(push),
             .groups = {uint32_t(bh), 1, 1},
             .spec = spec,
             .flops = bh * positions * (4ull * d.dk * d.dv + (opt.causal ? uint64_t(chunk) * (d.dk + d.dv) : 0)),
             .bytes = bh * (es * positions * 2 * (d.dk + d.dv) + 8ull * d.dk * d.dv)}));
      }
      return Status::ok();
    };
    if (opt.causal) {
      // Each gradient is its own scan with the state rebuilt alongside: dq forward, dk and dv backward.
      RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
      RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardDq, dq));
      RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
      RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardDk, dk));
      RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
      return scan(gpu::kLaBackwardDv, dv);
    }
    // Non-causal: dq from S = phi(K)^T V (the forward's state pass), dk and dv from R = phi(Q)^T dO.
    LinearAttentionOptions state_pass = opt;
    state_pass.continue_state = false;
    RILL_RETURN_IF_ERROR(linear_attention_state(seq, q, k, v, dq, scratch, state_pass));
    RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardDq, dq));
    RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
    RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardState, dk));  // R only; dk is not written by this pass
    RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardDk, dk));
    RILL_RETURN_IF_ERROR(scan(gpu::kLaBackwardDv, dv));
    return Status::ok();
  });
}

Status linear_attention_step(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                             const Tensor& state, const LinearAttentionOptions& opt) {
  return detail::whole_op(seq, "linear_attention_step", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, &state, opt, true));
    if (d.n != 1) return invalid_argument("linear_attention_step: q " + q.describe() + " must hold one position");
    if (!opt.causal) return invalid_argument("linear_attention_step: decoding is causal");
    RILL_RETURN_IF_ERROR(detail::require_disjoint(
        {{&o, "o"}, {&state, "state"}}, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {opt.decay, "decay"}}, kLinearAttentionOp));
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kLinearAttentionOp));
    const uint64_t bh = uint64_t(d.batch) * d.heads, es = dtype_size(q.dtype());
    const gpu::LaStepPush push{d.heads, d.dk, d.dv};
    return seq.dispatch({.kernel = "linear_attention/la_step_" + out_suffix(suffix, q, o),
                         .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &state, &o},
                         .push = push_bytes(push),
                         .groups = {uint32_t(bh), 1, 1},
                         .spec = spec_for(opt),
                         .flops = 4ull * d.dk * d.dv * bh,
                         .bytes = bh * (8ull * d.dk * d.dv + es * (2 * d.dk + d.dv) + dtype_size(o.dtype()) * d.dv)});
  });
}

Status linear_attention_naive(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const LinearAttentionOptions& opt) {
  return detail::whole_op(seq, "linear_attention_naive", [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, nullptr, opt, true));
    if (!opt.causal) return invalid_argument("linear_attention_naive: only the causal form");
    RILL_RETURN_IF_ERROR(detail::require_disjoint({{&o, "o"}}, {{&q, "q"}, {&k, "k"}, {&v, "v"}}, kLinearAttentionOp));
    RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kLinearAttentionOp));
    const uint64_t total = o.element_count(), bh = uint64_t(d.batch) * d.heads;
    // Keys per dispatch: each key costs an invocation Dk + 2 loop iterations.
    const uint64_t keys = std::max<uint64_t>(1, std::min<uint64_t>(d.n, detail::loop_budget(seq) / (d.dk + 2)));
    for (uint64_t s0 = 0; s0 < d.n; s0 += keys) {
      const uint64_t s1 = std::min<uint64_t>(d.n, s0 + keys);
      const gpu::LaNaivePush push{d.heads,         d.n,          d.dk,         d.dv,
                                  uint32_t(total), uint32_t(s0), uint32_t(s1), s0 > 0 ? 1u : 0u};
      // Pairs (t, s) with s in [s0, s1) and s <= t.
      const uint64_t pairs = (s1 - s0) * (d.n - s0) - (s1 - s0) * (s1 - s0 - 1) / 2;
      RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "linear_attention/la_naive_" + out_suffix(suffix, q, o),
                                         .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &o},
                                         .push = push_bytes(push),
                                         .groups = detail::groups_for(total, kWorkgroup),
                                         .spec = spec_for(opt),
                                         .flops = 2 * bh * pairs * (d.dk + 1) * d.dv,
                                         .bytes = dtype_size(q.dtype()) * (q.element_count() * 2 + v.element_count()) +
                                                  dtype_size(o.dtype()) * v.element_count()}));
    }
    return Status::ok();
  });
}

}  // namespace rill::ops
