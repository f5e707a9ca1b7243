// Linear attention dispatch: shape rules, chunk splitting over bounded dispatches, cost declarations.
#include "rill/ops/linear_attention.hpp"

#include <algorithm>

#include "ops/op_common.hpp"
#include "vk/quirks.hpp"

namespace rill::ops {
namespace {

constexpr const char* kOp = "linear_attention";
constexpr uint32_t kWorkgroup = 64;

struct Dims {
  uint32_t batch, heads, n, dk, dv;
};

Result<Dims> check_shapes(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor* state,
                          const LinearAttentionOptions& opt) {
  RILL_RETURN_IF_ERROR(detail::float_suffix(q, kOp).status());
  if (q.shape().size() != 4) return invalid_argument("linear_attention: q " + q.describe() + " must be [B, H, N, Dk]");
  RILL_RETURN_IF_ERROR(detail::require_same_shape(q, k, kOp, "k"));
  if (!v.valid() || v.shape().size() != 4 || v.dtype() != q.dtype() ||
      !std::equal(v.shape().begin(), v.shape().begin() + 3, q.shape().begin()))
    return invalid_argument("linear_attention: v " + v.describe() + " must be [B, H, N, Dv] like " + q.describe());
  RILL_RETURN_IF_ERROR(detail::require_same_shape(v, o, kOp, "o"));
  const auto& s = q.shape();
  if (q.element_count() > UINT32_MAX || v.element_count() > UINT32_MAX)
    return out_of_range("linear_attention: more than 2^32 elements in q or v");
  Dims d{uint32_t(s[0]), uint32_t(s[1]), uint32_t(s[2]), uint32_t(s[3]), uint32_t(v.shape()[3])};
  if (uint64_t(d.batch) * d.heads > 65535) return out_of_range("linear_attention: B * H must be <= 65535");
  if (state) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*state, DType::kF32, kOp, "state"));
    if (state->shape() != std::vector<int64_t>{s[0], s[1], s[3], v.shape()[3]})
      return invalid_argument("linear_attention: state " + state->describe() + " must be [B, H, Dk, Dv] f32");
  }
  if (opt.decay) {
    RILL_RETURN_IF_ERROR(detail::require_dtype(*opt.decay, DType::kF32, kOp, "decay"));
    RILL_RETURN_IF_ERROR(detail::require_elements(*opt.decay, d.heads, kOp, "decay"));
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

// Loop iterations one invocation runs per chunk (the larger of the forward and backward kernels):
// the scores, then for each owned row or column the inter-chunk, intra-chunk and update loops.
uint64_t iterations_per_chunk(const Dims& d, uint32_t chunk) {
  const uint64_t c = chunk, inner = std::max(d.dk, d.dv), owned = (inner + kWorkgroup - 1) / kWorkgroup;
  return (c * c + kWorkgroup - 1) / kWorkgroup * (inner + 1) + owned * (c * (inner + (c + 1) / 2 + 2) + inner * (c + 1) + 1) + 4;
}

// Chunks per dispatch: a GPU watchdog (mobile) kills long dispatches, and a driver loop limit
// (lavapipe) bounds the serial work of one invocation; elsewhere fewer, longer dispatches.
Result<uint32_t> chunks_per_dispatch(const Sequence& seq, const Dims& d, const LinearAttentionOptions& opt) {
  const uint64_t per_chunk = iterations_per_chunk(d, opt.chunk);
  RILL_RETURN_IF_ERROR(detail::check_loop_budget(seq, per_chunk, kOp, "one chunk (use a smaller chunk)"));
  uint64_t per = opt.chunks_per_dispatch != 0 ? opt.chunks_per_dispatch
                                               : (vk::quirk_flags_for(seq.device()).short_dispatches ? 16 : 256);
  per = std::min<uint64_t>(per, detail::loop_budget(seq) / per_chunk);
  return uint32_t(std::max<uint64_t>(per, 1));
}

std::vector<SpecValue> spec_for(const LinearAttentionOptions& opt) {
  return {spec_uint("WG_SIZE", kWorkgroup), spec_uint("FEATURE", uint32_t(opt.feature_map)),
          spec_uint("HAS_DECAY", opt.decay != nullptr)};
}

}  // namespace

namespace {

// CPU drivers run the causal forward as a scan with the state in registers (la_scan_cpu.glsl says
// why); it needs subgroup shuffles, which CPU drivers have, and Dk <= 128 (registers).
bool use_register_scan(const Sequence& seq, const Dims& d) {
  return seq.kernel_preference() == "cpu" && seq.device().caps.subgroup_size >= 4 && d.dk <= 128;
}

Status register_scan(Sequence& seq, const Dims& d, const std::string& suffix, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Tensor& o, const Tensor& state, const LinearAttentionOptions& opt) {
  const uint32_t sg = seq.device().caps.subgroup_size, cj = d.dk <= 64 ? 4 : 2;
  const uint64_t bh = uint64_t(d.batch) * d.heads, es = dtype_size(q.dtype());
  // Positions per dispatch: bounded by the driver's loop budget (chunks_per_dispatch, when given,
  // sets it in whole chunks, as for the chunked kernel).
  const uint64_t wanted = opt.chunks_per_dispatch != 0 ? uint64_t(opt.chunks_per_dispatch) * opt.chunk : 16384;
  const uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(wanted, detail::loop_budget(seq) - 64));
  const std::string kernel = "linear_attention/la_scan_cpu_" + suffix;
  for (uint64_t first = 0; first < d.n; first += per) {
    const uint32_t count = uint32_t(std::min<uint64_t>(per, d.n - first));
    struct Push {
      uint32_t heads, n, dk, dv, first, count;
    } push{d.heads, d.n, d.dk, d.dv, uint32_t(first), count};
    RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = kernel,
                                       .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &state, &o},
                                       .push = push_bytes(push),
                                       .groups = {uint32_t(bh), (d.dv + sg * cj - 1) / (sg * cj), 1},
                                       .spec = {spec_uint("SG", sg), spec_uint("FEATURE", uint32_t(opt.feature_map)),
                                                spec_uint("HAS_DECAY", opt.decay != nullptr), spec_uint("DK", d.dk),
                                                spec_uint("CJ", cj)},
                                       .flops = 4ull * d.dk * d.dv * count * bh,
                                       .bytes = bh * (es * count * (2ull * d.dk + 2ull * d.dv) + 8ull * d.dk * d.dv)}));
  }
  return Status::ok();
}

// Dispatches of the forward kernel in `mode` (0 causal, 1 state only, 2 apply) over all chunks.
Status forward_scan(Sequence& seq, const Dims& d, const std::string& suffix, const Tensor& q, const Tensor& k,
                    const Tensor& v, const Tensor& o, const Tensor& state, const LinearAttentionOptions& opt,
                    uint32_t mode) {
  RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
  if (mode == 0 && use_register_scan(seq, d)) return register_scan(seq, d, suffix, q, k, v, o, state, opt);
  const uint32_t chunks = (d.n + opt.chunk - 1) / opt.chunk;
  RILL_ASSIGN_OR_RETURN(const uint32_t per, chunks_per_dispatch(seq, d, opt));
  const uint64_t es = dtype_size(q.dtype()), bh = uint64_t(d.batch) * d.heads;
  for (uint32_t first = 0; first < chunks; first += per) {
    const uint32_t count = std::min(per, chunks - first);
    const uint64_t positions = std::min<uint64_t>(uint64_t(count) * opt.chunk, d.n - uint64_t(first) * opt.chunk);
    // Per position: inter q S and update k^T v (2 Dk Dv FMAs each), intra ~C/2 (Dk + Dv) FMAs.
    uint64_t flops = 0;
    if (mode != 2) flops += 2ull * d.dk * d.dv;
    if (mode != 1) flops += 2ull * d.dk * d.dv;
    if (mode == 0) flops += uint64_t(opt.chunk) * (d.dk + d.dv);
    const uint64_t bytes =
        es * positions * ((mode == 2 ? 1 : 2) * d.dk + (mode == 1 ? 1 : 2) * d.dv) + 8ull * d.dk * d.dv;
    struct Push {
      uint32_t heads, n, dk, dv, first_chunk, chunk_count;
    } push{d.heads, d.n, d.dk, d.dv, first, count};
    auto spec = spec_for(opt);
    spec.push_back(spec_uint("CHUNK", opt.chunk));
    spec.push_back(spec_uint("MODE", mode));
    RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "linear_attention/la_chunked_" + suffix,
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
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kOp));
  const auto& s = q.shape();
  const Dims d{uint32_t(s[0]), uint32_t(s[1]), uint32_t(s[2]), uint32_t(s[3]), uint32_t(v.shape()[3])};
  if (!opt.continue_state) RILL_RETURN_IF_ERROR(seq.fill_zero(state));
  return forward_scan(seq, d, suffix, q, k, v, unused_out, state, opt, 1);
}

}  // namespace

Status linear_attention_forward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                const Tensor& state, const LinearAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, &state, opt));
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kOp));
  RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
  if (!opt.continue_state) RILL_RETURN_IF_ERROR(seq.fill_zero(state));
  if (opt.causal) return forward_scan(seq, d, suffix, q, k, v, o, state, opt, 0);
  RILL_RETURN_IF_ERROR(forward_scan(seq, d, suffix, q, k, v, o, state, opt, 1));
  return forward_scan(seq, d, suffix, q, k, v, o, state, opt, 2);
}

Status linear_attention_backward(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_o,
                                 const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& scratch,
                                 const LinearAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, d_o, &scratch, opt));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dq, kOp, "dq"));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(q, dk, kOp, "dk"));
  RILL_RETURN_IF_ERROR(detail::require_same_shape(v, dv, kOp, "dv"));
  if (opt.continue_state) return unimplemented("linear_attention_backward: a non-zero initial state is not supported");
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kOp));
  RILL_RETURN_IF_ERROR(check_chunk(seq, opt));
  const uint32_t chunks = (d.n + opt.chunk - 1) / opt.chunk;
  RILL_ASSIGN_OR_RETURN(const uint32_t per, chunks_per_dispatch(seq, d, opt));
  const uint64_t es = dtype_size(q.dtype()), bh = uint64_t(d.batch) * d.heads;
  // One scan of the backward kernel in `mode`, over every chunk range (forward or backward in time).
  auto scan = [&](uint32_t mode, const Tensor& out) -> Status {
    const uint32_t ranges = (chunks + per - 1) / per;
    for (uint32_t r = 0; r < ranges; ++r) {
      const uint32_t index = mode == 0 ? r : ranges - 1 - r;
      const uint32_t first = index * per, count = std::min(per, chunks - first);
      const uint64_t positions = std::min<uint64_t>(uint64_t(count) * opt.chunk, d.n - uint64_t(first) * opt.chunk);
      struct Push {
        uint32_t heads, n, dk, dv, first_chunk, chunk_count;
      } push{d.heads, d.n, d.dk, d.dv, first, count};
      auto spec = spec_for(opt);
      spec.push_back(spec_uint("CHUNK", opt.chunk));
      spec.push_back(spec_uint("MODE", mode));
      spec.push_back(spec_uint("CAUSAL", opt.causal));
      RILL_RETURN_IF_ERROR(seq.dispatch(
          {.kernel = "linear_attention/la_chunked_bwd_" + suffix,
           .bindings = {&q, &k, &v, &d_o, opt.decay ? opt.decay : &q, &scratch, &out},
           .push = push_bytes(push),
           .groups = {uint32_t(bh), 1, 1},
           .spec = spec,
           .flops = bh * positions * (4ull * d.dk * d.dv + (opt.causal ? uint64_t(opt.chunk) * (d.dk + d.dv) : 0)),
           .bytes = bh * (es * positions * 2 * (d.dk + d.dv) + 8ull * d.dk * d.dv)}));
    }
    return Status::ok();
  };
  if (opt.causal) {
    // Each gradient is its own scan with the state rebuilt alongside: dq forward, dk and dv backward.
    RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
    RILL_RETURN_IF_ERROR(scan(0, dq));
    RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
    RILL_RETURN_IF_ERROR(scan(1, dk));
    RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
    return scan(2, dv);
  }
  // Non-causal: dq from S = phi(K)^T V (the forward's state pass), dk and dv from R = phi(Q)^T dO.
  LinearAttentionOptions state_pass = opt;
  state_pass.continue_state = false;
  RILL_RETURN_IF_ERROR(linear_attention_state(seq, q, k, v, dq, scratch, state_pass));
  RILL_RETURN_IF_ERROR(scan(0, dq));
  RILL_RETURN_IF_ERROR(seq.fill_zero(scratch));
  RILL_RETURN_IF_ERROR(scan(3, dk));  // R only; dk is not written by this pass
  RILL_RETURN_IF_ERROR(scan(1, dk));
  RILL_RETURN_IF_ERROR(scan(2, dv));
  return Status::ok();
}

Status linear_attention_step(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                             const Tensor& state, const LinearAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, &state, opt));
  if (d.n != 1) return invalid_argument("linear_attention_step: q " + q.describe() + " must hold one position");
  if (!opt.causal) return invalid_argument("linear_attention_step: decoding is causal");
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kOp));
  const uint64_t bh = uint64_t(d.batch) * d.heads, es = dtype_size(q.dtype());
  struct Push {
    uint32_t heads, dk, dv;
  } push{d.heads, d.dk, d.dv};
  return seq.dispatch({.kernel = "linear_attention/la_step_" + suffix,
                       .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &state, &o},
                       .push = push_bytes(push),
                       .groups = {uint32_t(bh), 1, 1},
                       .spec = spec_for(opt),
                       .flops = 4ull * d.dk * d.dv * bh,
                       .bytes = bh * (8ull * d.dk * d.dv + es * (2 * d.dk + 2 * d.dv))});
}

Status linear_attention_naive(Sequence& seq, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const LinearAttentionOptions& opt) {
  RILL_ASSIGN_OR_RETURN(Dims d, check_shapes(q, k, v, o, nullptr, opt));
  if (!opt.causal) return invalid_argument("linear_attention_naive: only the causal form");
  RILL_ASSIGN_OR_RETURN(std::string suffix, detail::float_suffix(q, kOp));
  const uint64_t total = o.element_count(), bh = uint64_t(d.batch) * d.heads;
  // Keys per dispatch: each key costs an invocation Dk + 2 loop iterations.
  const uint64_t keys = std::max<uint64_t>(1, std::min<uint64_t>(d.n, detail::loop_budget(seq) / (d.dk + 2)));
  for (uint64_t s0 = 0; s0 < d.n; s0 += keys) {
    const uint64_t s1 = std::min<uint64_t>(d.n, s0 + keys);
    struct Push {
      uint32_t heads, n, dk, dv, total, s_begin, s_end, accumulate;
    } push{d.heads, d.n, d.dk, d.dv, uint32_t(total), uint32_t(s0), uint32_t(s1), s0 > 0 ? 1u : 0u};
    // Pairs (t, s) with s in [s0, s1) and s <= t.
    const uint64_t pairs = (s1 - s0) * (d.n - s0) - (s1 - s0) * (s1 - s0 - 1) / 2;
    RILL_RETURN_IF_ERROR(seq.dispatch({.kernel = "linear_attention/la_naive_" + suffix,
                                       .bindings = {&q, &k, &v, opt.decay ? opt.decay : &q, &o},
                                       .push = push_bytes(push),
                                       .groups = detail::groups_for(total, kWorkgroup),
                                       .spec = spec_for(opt),
                                       .flops = 2 * bh * pairs * (d.dk + 1) * d.dv,
                                       .bytes = dtype_size(q.dtype()) * (q.element_count() * 2 + v.element_count() * 2)}));
  }
  return Status::ok();
}

}  // namespace rill::ops
