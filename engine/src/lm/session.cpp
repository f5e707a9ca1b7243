// Session: the recurrent state of one conversation, prefill in bounded segments, decoding steps,
// and saving and restoring the state.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/file_io.hpp"
#include "core/fnv1a.hpp"
#include "core/log.hpp"
#include "lm/graph.hpp"
#include "lm/lm_internal.hpp"
#include "lm/model_impl.hpp"

namespace rill::lm {

// Why a session's state is spent: until reset() or a restore, every call that would run on it or
// save it is refused with the reason. Marking needs no memory (a call that ran out of it marks):
// the flag is set first, and the reason stays empty where there is no memory left to say it.
class SpentState {
 public:
  bool spent() const { return spent_; }
  const std::string& why() const { return why_; }
  template <typename F>
  void mark(F&& make_why) noexcept {
    spent_ = true;
    try {
      why_ = make_why();
    } catch (const std::bad_alloc&) {
      why_.clear();
    }
  }
  void clear() noexcept {
    spent_ = false;
    why_.clear();
  }

 private:
  bool spent_ = false;
  std::string why_;
};

struct Session::Impl {
  std::shared_ptr<Model::Impl> model;
  detail::StateTensors state;
  uint64_t position = 0;
  std::unique_ptr<detail::Graph> step;     // L = 1, recorded on first use
  std::unique_ptr<detail::Graph> segment;  // the last prefill segment length used
  uint32_t segment_len = 0;                // the model's, or less where that did not fit in memory
  // The logits after the last position consumed (empty at position 0): what a restored or stopped
  // session draws or scores its next token from. Kept as each step or segment ends, and saved.
  std::vector<float> last_logits;
  // Whether the state is spent (a call's values were not finite, a call failed part way), and why.
  SpentState spent;

  const ModelConfig& config() const { return model->config; }
  // Takes the state in `file` if it is one of this model's, else leaves the session as it was.
  // `*uploading` turns true when the checks have passed and the state tensors start to change.
  Status restore(const SafetensorsFile& file, bool* uploading);
  bool has(LayerKind kind) const {
    return std::find(config().layer_kinds.begin(), config().layer_kinds.end(), kind) != config().layer_kinds.end();
  }
  // Positions a session can reach: the softmax caches' capacity, and 32-bit positions in kernels.
  uint64_t max_positions() const {
    return has(LayerKind::kSoftmax) ? model->options.softmax_capacity : uint64_t(UINT32_MAX);
  }
  // A session of `model` at position 0, its state tensors allocated (zero_state() clears them;
  // a fork copies over them instead).
  static Result<std::unique_ptr<Impl>> open(std::shared_ptr<Model::Impl> model);
  Status zero_state();
  // OK where every value is finite; else the error that names why, and the session's state is spent.
  // `what` names the values in the error (the logits, or a score's log-probabilities).
  Status check_finite(std::span<const float> values, const char* op, const char* what = "logits");
  // OK unless the state is spent: then FailedPrecondition naming `op` and why.
  Status check_usable(const char* op) const;
  // `failed`, from a run that may have reached the device: once submitted, the state tensors hold
  // tokens the position does not count, so the state is spent.
  Status failed_run(const Status& failed, bool submitted, const char* op);
  // One position; `op` names the call in errors (a prefill's steps to a block boundary are its own).
  Result<std::vector<float>> decode(uint32_t token, const char* op = "lm decode");
  Status prepare_segment(uint32_t len, detail::GraphForm form);
  // Prefill (log_probs null) or scoring (log_probs receives tokens.size() - 1 values): `op` names
  // the call in errors.
  Result<std::vector<float>> consume(std::span<const uint32_t> tokens, const PrefillHooks& hooks,
                                     std::vector<float>* log_probs, const char* op);
  uint64_t state_bytes() const;  // the state tensors' device bytes
  // The largest state file (or serialized state) of this session: its state tensors, the last
  // logits and a header. Anything larger is not one, and is refused before it is parsed.
  uint64_t max_state_bytes() const;
};

namespace {

std::string layer_name(size_t i, const char* what) { return "layers." + std::to_string(i) + "." + what; }

// Whether every value is finite: the largest exponent field, an integer max (it vectorizes, so a
// decoding step's 64,000 logits cost microseconds).
bool all_finite(std::span<const float> values) {
  uint32_t most = 0;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    most = std::max(most, bits & 0x7f800000u);
  }
  return most != 0x7f800000u;
}

// ResourceExhausted for `op` having run out of host memory, saying whether the state is spent; with
// no memory left for the message, one without it.
Status session_out_of_memory(const char* op, bool spent) noexcept {
  try {
    return resource_exhausted(std::string(op) + ": out of host memory" +
                              (spent ? "; the session's state is spent: reset() it or restore a saved state" : ""));
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted, std::string());
  }
}

// Runs `call`, turning running out of host memory (a logits or scores vector, a state's copies)
// into ResourceExhausted naming `op`, never an exception through the API. `changes_state`: the call
// may have moved the position or the state tensors when it ran out, so the session is spent; read
// when it runs out, so a call that first checks can set it when it starts changing.
template <typename F>
auto out_of_memory_guarded(SpentState& spent, const char* op, const bool& changes_state, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    if (changes_state) spent.mark([&] { return std::string("out of host memory during ") + op; });
    return session_out_of_memory(op, changes_state);
  }
}

}  // namespace

Status Session::Impl::zero_state() {
  RILL_ASSIGN_OR_RETURN(Sequence seq, model->ctx.sequence({.label = "lm reset"}));
  for (auto* list : {&state.la_state, &state.cache_k, &state.cache_v})
    for (const Tensor& t : *list)
      if (t.valid()) RILL_RETURN_IF_ERROR(seq.fill_zero(t));
  if (Status ran = seq.run(); !ran.is_ok()) {
    spent.mark([&] { return "a reset failed part way (" + ran.message() + ")"; });  // some zeroed, some not
    return ran;
  }
  position = 0;
  last_logits.clear();
  spent.clear();
  return Status::ok();
}

Result<Session> Model::session() {
  RILL_ASSIGN_OR_RETURN(auto s, Session::Impl::open(impl_));
  RILL_RETURN_IF_ERROR(s->zero_state());
  return Session(std::move(s));
}

Result<std::unique_ptr<Session::Impl>> Session::Impl::open(std::shared_ptr<Model::Impl> model) {
  auto s = std::make_unique<Session::Impl>();
  s->model = model;
  s->segment_len = model->segment;
  Context& ctx = model->ctx;
  const ModelConfig& c = model->config;
  const int64_t H = c.heads, Dh = c.head_dim();
  const size_t n = c.layer_kinds.size();
  s->state.la_state.resize(n);
  s->state.cache_k.resize(n);
  s->state.cache_v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const LayerKind kind = c.layer_kinds[i];
    if (kind == LayerKind::kNorm) {
      const int64_t Dk = c.has_lrpe(uint32_t(i)) ? 2 * Dh : Dh;  // LRPE doubles q and k
      RILL_ASSIGN_OR_RETURN(s->state.la_state[i], ctx.tensor(DType::kF32, {1, H, Dk, Dh}, layer_name(i, "state"),
                                                             MemoryPool::kWeights));
    } else {
      const int64_t rows = kind == LayerKind::kDiag ? c.block : model->options.softmax_capacity;
      RILL_ASSIGN_OR_RETURN(s->state.cache_k[i],
                            ctx.tensor(model->dtype, {H, rows, Dh}, layer_name(i, "cache_k"), MemoryPool::kWeights));
      RILL_ASSIGN_OR_RETURN(s->state.cache_v[i],
                            ctx.tensor(model->dtype, {H, rows, Dh}, layer_name(i, "cache_v"), MemoryPool::kWeights));
    }
  }
  return s;
}

Status Session::Impl::check_finite(std::span<const float> values, const char* op, const char* what) {
  if (all_finite(values)) return Status::ok();
  const char* const hint = "; the session's state is spent: reset() it or restore a saved state";
  // f16 holds at most 65504: weights that make activations larger (the residual stream, the FFN's
  // hidden values) pass it. NormAttention's output, which grows with the position, is kept in f32.
  const Status failed =
      model->dtype == DType::kF16
          ? out_of_range(std::string(op) + ": the model's f16 activations overflowed by position " +
                         std::to_string(position) + "; run it with f32 activations (Precision::kF32)" + hint)
          : data_loss(std::string(op) + ": the model's " + what + " are not finite by position " +
                      std::to_string(position) + " (its weights, or the device's arithmetic)" + hint);
  spent.mark([&] { return failed.message(); });
  return failed;
}

Status Session::Impl::check_usable(const char* op) const {
  if (!spent.spent()) return Status::ok();
  return failed_precondition(std::string(op) + ": the session's state is spent (" + spent.why() + ")");
}

Status Session::Impl::failed_run(const Status& failed, bool submitted, const char* op) {
  if (!submitted) return failed;
  spent.mark([&] { return std::string(op) + " failed after its work was submitted (" + failed.message() + ")"; });
  return Status(failed.code(),
                failed.message() + "; the session's state is spent: reset() it or restore a saved state");
}

Result<std::vector<float>> Session::Impl::decode(uint32_t token, const char* op) {
  RILL_RETURN_IF_ERROR(check_usable(op));
  if (token >= config().vocab)
    return invalid_argument(std::string(op) + ": token " + std::to_string(token) +
                            " is not below the vocabulary size " + std::to_string(config().vocab));
  if (position + 1 > max_positions())
    return out_of_range(std::string(op) + ": the session is full at position " + std::to_string(position) +
                        (has(LayerKind::kSoftmax) ? " (softmax_capacity)" : ""));
  if (!step) {
    RILL_ASSIGN_OR_RETURN(step, detail::make_graph(*model, state, 1, detail::GraphForm::kDecode));
  }
  bool submitted = false;
  Result<std::vector<float>> ran = detail::run_graph(*model, *step, {&token, 1}, position, submitted);
  if (!ran.is_ok()) return failed_run(ran.status(), submitted, op);
  std::vector<float> logits = std::move(ran).value();
  position += 1;
  last_logits.clear();  // until these are known finite: a state saved now holds none
  RILL_RETURN_IF_ERROR(check_finite(logits, op));
  last_logits = logits;
  return logits;
}

Status Session::Impl::prepare_segment(uint32_t len, detail::GraphForm form) {
  if (segment && segment->len == len && segment->scored == (form == detail::GraphForm::kScore)) return Status::ok();
  segment.reset();  // at most one segment's activations at a time: memory stays bounded
  RILL_ASSIGN_OR_RETURN(segment, detail::make_graph(*model, state, len, form));
  return Status::ok();
}

Result<std::vector<float>> Session::Impl::consume(std::span<const uint32_t> tokens, const PrefillHooks& hooks,
                                                  std::vector<float>* log_probs, const char* op) {
  RILL_RETURN_IF_ERROR(check_usable(op));
  if (tokens.empty()) return invalid_argument(std::string(op) + ": no tokens");
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= config().vocab)
      return invalid_argument(std::string(op) + ": token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                              ", not below the vocabulary size " + std::to_string(config().vocab));
  if (tokens.size() > max_positions() - position)
    return out_of_range(std::string(op) + ": " + std::to_string(tokens.size()) + " tokens from position " +
                        std::to_string(position) + " go past the " + std::to_string(max_positions()) +
                        " positions this session can hold" + (has(LayerKind::kSoftmax) ? " (softmax_capacity)" : ""));
  const detail::GraphForm form = log_probs ? detail::GraphForm::kScore : detail::GraphForm::kPrefill;
  if (log_probs) log_probs->assign(tokens.size() - 1, 0.0f);
  std::vector<float> logits;
  size_t i = 0;
  // Stops between whole steps, so the session holds exactly the positions done.
  auto stopped = [&]() -> Status {
    if (!hooks.stop || !hooks.stop()) return Status::ok();
    return cancelled(std::string(op) + ": stopped at position " + std::to_string(position) + " after " +
                     std::to_string(i) + " of " + std::to_string(tokens.size()) + " tokens; the session holds them: " +
                     (log_probs ? "score the remaining tokens to go on (this call's scores are lost; the first "
                                  "remaining token scores from last_logits())"
                                : "prefill the remaining tokens to go on"));
  };
  // Segments start on DiagAttention block boundaries; reach one through decoding steps, whose
  // logits score the next token on the host.
  const uint32_t align = has(LayerKind::kDiag) ? config().block : 1;
  while (i < tokens.size() && position % align != 0) {
    RILL_RETURN_IF_ERROR(stopped());
    RILL_ASSIGN_OR_RETURN(logits, decode(tokens[i++], op));
    if (log_probs && i < tokens.size()) {
      RILL_ASSIGN_OR_RETURN(const double lp, log_prob(logits, tokens[i]));
      (*log_probs)[i - 1] = float(lp);
    }
  }
  std::vector<uint32_t> targets;
  std::vector<float> segment_log_probs;
  // While halving: the first refused length, the last refusal, and what to say once a length fits.
  uint32_t unhalved = segment_len;
  std::string refusal, halved_note;
  while (i < tokens.size()) {
    if (refusal.empty()) RILL_RETURN_IF_ERROR(stopped());  // once per segment, not again as it is halved
    const size_t len = std::min<size_t>(segment_len, tokens.size() - i);
    // A segment whose activations do not fit (the device's memory or the context's budget:
    // ResourceExhausted; one allocation or binding past the device's limits: OutOfRange) is
    // recorded again at half the length, in whole blocks, for the rest of the session: nothing has
    // run yet, so only the speed changes. A limit that a shorter segment hits word for word (a
    // kernel's limit on the model's own sizes) does not depend on the length: it is returned, and
    // the session keeps its segment length. (Memory is always retried: pooled blocks can fail at the
    // same size for both lengths.)
    if (const Status made = prepare_segment(uint32_t(len), form); !made.is_ok()) {
      const uint32_t half = len / 2 / align * align;
      const bool too_big = made.code() == StatusCode::kResourceExhausted || made.code() == StatusCode::kOutOfRange;
      if (made.code() == StatusCode::kOutOfRange && made.message() == refusal) {
        segment_len = unhalved;
        return made;
      }
      if (!too_big || half == 0) return made;
      if (refusal.empty()) unhalved = segment_len;
      refusal = made.message();
      halved_note = std::string(op) + ": " + std::to_string(unhalved) + "-position segments do not fit (at " +
                    std::to_string(len) + ": " + made.message() + "); this session prefills in segments of " +
                    std::to_string(half);
      segment_len = half;
      continue;
    }
    if (!halved_note.empty()) log_warning(halved_note);
    refusal.clear();
    halved_note.clear();
    const auto part = tokens.subspan(i, len);
    if (log_probs) {
      // Each row's next token; the segment's last row scores the next segment's first.
      targets.assign(len, UINT32_MAX);
      for (size_t r = 0; r < len && i + r + 1 < tokens.size(); ++r) targets[r] = tokens[i + r + 1];
    }
    bool submitted = false;
    Result<std::vector<float>> ran =
        log_probs ? detail::run_scored_graph(*model, *segment, part, targets, position, segment_log_probs, submitted)
                  : detail::run_graph(*model, *segment, part, position, submitted);
    if (!ran.is_ok()) return failed_run(ran.status(), submitted, op);
    logits = std::move(ran).value();
    if (log_probs) {
      for (size_t r = 0; r < len && i + r + 1 < tokens.size(); ++r) (*log_probs)[i + r] = segment_log_probs[r];
    }
    position += len;
    last_logits.clear();
    RILL_RETURN_IF_ERROR(check_finite(logits, op));
    last_logits = logits;
    if (log_probs)
      RILL_RETURN_IF_ERROR(check_finite(std::span(*log_probs).subspan(i, std::min(len, tokens.size() - 1 - i)), op,
                                        "log-probabilities"));
    i += len;
    if (hooks.progress) hooks.progress(i, tokens.size());
  }
  return logits;
}

Result<std::vector<float>> Session::prefill(std::span<const uint32_t> tokens, const ProgressFn& progress) {
  return prefill(tokens, PrefillHooks{.progress = progress, .stop = {}});
}

Result<std::vector<float>> Session::prefill(std::span<const uint32_t> tokens, const PrefillHooks& hooks) {
  return out_of_memory_guarded(impl_->spent, "lm prefill", true,
                               [&] { return impl_->consume(tokens, hooks, nullptr, "lm prefill"); });
}

Result<TokenScores> Session::score(std::span<const uint32_t> tokens, const PrefillHooks& hooks) {
  return out_of_memory_guarded(impl_->spent, "lm score", true, [&]() -> Result<TokenScores> {
    TokenScores scores;
    RILL_ASSIGN_OR_RETURN(scores.logits, impl_->consume(tokens, hooks, &scores.log_probs, "lm score"));
    return scores;
  });
}

Result<double> log_prob(std::span<const float> logits, uint32_t token) {
  if (token >= logits.size())
    return invalid_argument("lm log_prob: token " + std::to_string(token) + " is not below the " +
                            std::to_string(logits.size()) + " logits");
  double most = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    // -Inf is a token ruled out; NaN or +Inf leave no distribution to take a probability from.
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity())
      return invalid_argument("lm log_prob: logit " + std::to_string(i) + " is " + std::to_string(logits[i]));
    most = std::max(most, double(logits[i]));
  }
  if (most == -std::numeric_limits<double>::infinity())
    return invalid_argument("lm log_prob: every logit is -inf (no token is possible)");
  double sum = 0.0;
  for (float x : logits) sum += std::exp(double(x) - most);
  return (double(logits[token]) - most) - std::log(sum);
}

Result<Session> Session::fork() const {
  return out_of_memory_guarded(impl_->spent, "lm fork", false, [&]() -> Result<Session> {
    const Impl& s = *impl_;
    RILL_RETURN_IF_ERROR(s.check_usable("lm fork"));
    RILL_ASSIGN_OR_RETURN(auto copy, Impl::open(s.model));
    RILL_ASSIGN_OR_RETURN(Sequence seq, s.model->ctx.sequence({.label = "lm fork"}));
    for (auto member :
         {&detail::StateTensors::la_state, &detail::StateTensors::cache_k, &detail::StateTensors::cache_v})
      for (size_t i = 0; i < (s.state.*member).size(); ++i)
        if ((s.state.*member)[i].valid())
          RILL_RETURN_IF_ERROR(seq.copy((s.state.*member)[i], (copy->state.*member)[i]));
    RILL_RETURN_IF_ERROR(seq.run());
    copy->position = s.position;
    copy->segment_len = s.segment_len;
    copy->last_logits = s.last_logits;
    return Session(std::move(copy));
  });
}

Result<std::vector<float>> Session::decode(uint32_t token) {
  return out_of_memory_guarded(impl_->spent, "lm decode", true, [&] { return impl_->decode(token); });
}

uint32_t Session::decode_dispatches() const { return impl_->step ? impl_->step->seq->stats().dispatches : 0; }
uint64_t Session::position() const { return impl_->position; }
uint64_t Session::max_positions() const { return impl_->max_positions(); }
std::span<const float> Session::last_logits() const { return impl_->last_logits; }
// Running out of host memory reaches this guard before the zeroing runs (a run that fails part way
// is zero_state's to report, and it marks the session spent): the session is then as it was.
Status Session::reset() {
  return out_of_memory_guarded(impl_->spent, "lm reset", false, [&] { return impl_->zero_state(); });
}

uint32_t Session::prefill_segment() const { return impl_->segment_len; }

uint64_t Session::device_bytes() const {
  return state_bytes() + (impl_->segment ? impl_->segment->device_bytes : 0) +
         (impl_->step ? impl_->step->device_bytes : 0);
}

void Session::release_prefill_memory() { impl_->segment.reset(); }

uint64_t Session::state_bytes() const { return impl_->state_bytes(); }

// State file: one tensor per state tensor (named like the tensors above), the last logits, and
// metadata naming the format, the config's fingerprint, the weights' tag, the precision, the
// position and a checksum of what a restore takes.
namespace {
// v2 added the weights' tag and the last logits, v3 the checksum; v1 and v2 files still restore. A
// rill that knows only an older format names the newer one when it refuses it.
constexpr const char* kFormat = "rill.lm.state.v3";
constexpr const char* kFormatV2 = "rill.lm.state.v2";
constexpr const char* kFormatV1 = "rill.lm.state.v1";
constexpr const char* kLastLogits = "last_logits";  // f32 [vocab]; absent at position 0 and in older files

// The checksum of a state (v3): the position and each tensor's name, size and bytes, in the order
// the session lists them, the last logits last. A damaged byte is refused, not continued from (the
// tensors' finiteness check passes most flipped bits). Call add() per tensor, in that order.
class StateChecksum {
 public:
  explicit StateChecksum(std::string_view position) { sum_.add(position); }
  void add(std::string_view name, std::span<const uint8_t> bytes) { sum_.add(name).add_u64(bytes.size()).add(bytes); }
  std::string hex() const { return sum_.hex(); }

 private:
  Fnv1a sum_;
};
}  // namespace

Result<std::vector<uint8_t>> Session::serialize_state() const {
  return out_of_memory_guarded(impl_->spent, "lm state", false, [&]() -> Result<std::vector<uint8_t>> {
    const Impl& s = *impl_;
    RILL_RETURN_IF_ERROR(s.check_usable("lm state"));  // a spent state restored would fail again
    Context& ctx = s.model->ctx;
    SafetensorsWriter w;
    RILL_RETURN_IF_ERROR(w.set_metadata("format", kFormat));
    RILL_RETURN_IF_ERROR(w.set_metadata("fingerprint", detail::config_fingerprint(s.config())));
    RILL_RETURN_IF_ERROR(w.set_metadata("weights", s.model->weights_fingerprint));
    RILL_RETURN_IF_ERROR(w.set_metadata("precision", s.model->dtype == DType::kF16 ? "f16" : "f32"));
    const std::string position = std::to_string(s.position);
    RILL_RETURN_IF_ERROR(w.set_metadata("position", position));
    StateChecksum checksum(position);
    for (auto* list : {&s.state.la_state, &s.state.cache_k, &s.state.cache_v})
      for (const Tensor& t : *list) {
        if (!t.valid()) continue;
        std::vector<uint8_t> bytes(t.size_bytes());
        RILL_RETURN_IF_ERROR(ctx.download(t, bytes));
        RILL_RETURN_IF_ERROR(
            w.add(t.name(), t.dtype() == DType::kF16 ? TensorDType::kF16 : TensorDType::kF32, t.shape(), bytes));
        checksum.add(t.name(), bytes);
      }
    if (!s.last_logits.empty()) {
      RILL_RETURN_IF_ERROR(w.add_floats(kLastLogits, {int64_t(s.last_logits.size())}, s.last_logits));
      checksum.add(kLastLogits, std::span(reinterpret_cast<const uint8_t*>(s.last_logits.data()),
                                          s.last_logits.size() * sizeof(float)));  // as the file holds them
    }
    RILL_RETURN_IF_ERROR(w.set_metadata("checksum", checksum.hex()));
    return w.serialize();
  });
}

Status Session::save_state(const std::string& path) const {
  return out_of_memory_guarded(impl_->spent, "lm state", false, [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_state());
    RILL_ASSIGN_OR_RETURN(SafetensorsFile check, SafetensorsFile::from_bytes(bytes));  // never write what we can't read
    (void)check;
    return rill::write_file_atomic(path, bytes);
  });
}

uint64_t Session::Impl::state_bytes() const {
  uint64_t bytes = 0;
  for (auto* list : {&state.la_state, &state.cache_k, &state.cache_v})
    for (const Tensor& t : *list) bytes += t.size_bytes();
  return bytes;
}

uint64_t Session::Impl::max_state_bytes() const { return state_bytes() + uint64_t(config().vocab) * 4 + (1u << 20); }

// A restore that runs out of host memory while it reads and checks the file leaves the session as
// it was; once uploading, it may have uploaded part of the file: the session is spent.
Status Session::restore_state(const std::string& path) {
  bool uploading = false;
  return out_of_memory_guarded(impl_->spent, "lm state", uploading, [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, rill::read_file(path, impl_->max_state_bytes()));
    RILL_ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::from_bytes(std::move(bytes), path));
    return impl_->restore(file, &uploading).with_context("'" + path + "'");
  });
}

Status Session::deserialize_state(std::span<const uint8_t> bytes) {
  // Bytes from an app's storage or the network are as untrusted as a file, and bounded as one.
  if (bytes.size() > impl_->max_state_bytes())
    return out_of_range("lm state: " + std::to_string(bytes.size()) + " bytes are more than a state of this session (" +
                        std::to_string(impl_->max_state_bytes()) + " bytes at most)");
  bool uploading = false;
  return out_of_memory_guarded(impl_->spent, "lm state", uploading, [&]() -> Status {
    RILL_ASSIGN_OR_RETURN(const SafetensorsFile file,
                          SafetensorsFile::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end())));
    return impl_->restore(file, &uploading);
  });
}

Status Session::Impl::restore(const SafetensorsFile& file, bool* uploading) {
  Impl& s = *this;
  const auto& meta = file.metadata();
  auto get = [&](const char* key) -> std::string {
    const auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  const std::string format = get("format");
  if (format != kFormat && format != kFormatV2 && format != kFormatV1)
    return data_loss("lm state: not a rill language-model state (format '" + format + "')");
  if (get("fingerprint") != detail::config_fingerprint(s.config()))
    return failed_precondition("lm state: saved from a model with another config (fingerprint " + get("fingerprint") +
                               ", this model " + detail::config_fingerprint(s.config()) + ")");
  // v1 states, saved before the weights' tag existed, have none: they restore, unchecked, with a
  // warning. A later state always has one: one without was cut down (past the weights' check).
  if (const std::string weights = get("weights"); weights.empty() && format != kFormatV1) {
    return data_loss("lm state: a " + format + " state without the tag of its model's weights");
  } else if (weights.empty()) {
    log_message(MessageSeverity::kWarning,
                "lm state: saved without a tag of its model's weights (an older rill): restored unchecked");
  } else if (weights != s.model->weights_fingerprint) {
    return failed_precondition("lm state: saved from a model with other weights (tag " + weights + ", this model " +
                               s.model->weights_fingerprint + "): a state only continues the weights that made it");
  }
  const std::string precision = s.model->dtype == DType::kF16 ? "f16" : "f32";
  if (get("precision") != precision)
    return failed_precondition("lm state: saved at precision '" + get("precision") + "', this model runs " + precision);
  const std::string pos_text = get("position");
  uint64_t saved_position = 0;
  const auto [end, ec] = std::from_chars(pos_text.data(), pos_text.data() + pos_text.size(), saved_position);
  if (pos_text.empty() || ec != std::errc() || end != pos_text.data() + pos_text.size() ||
      saved_position > s.max_positions())
    return data_loss("lm state: bad position '" + pos_text + "'");
  // Check every tensor before changing anything: a bad file leaves the session as it was.
  std::vector<std::pair<const Tensor*, std::span<const uint8_t>>> uploads;
  for (auto* list : {&s.state.la_state, &s.state.cache_k, &s.state.cache_v})
    for (const Tensor& t : *list) {
      if (!t.valid()) continue;
      RILL_ASSIGN_OR_RETURN(auto data, file.tensor(t.name(), t.dtype() == DType::kF16 ? TensorDType::kF16 : TensorDType::kF32,
                                                   t.shape()));
      RILL_RETURN_IF_ERROR(file.check_finite(*file.find(t.name())).with_context("lm state"));
      uploads.emplace_back(&t, data);
    }
  std::vector<float> logits;
  std::span<const uint8_t> logits_bytes;
  if (const SafetensorsEntry* e = file.find(kLastLogits)) {
    const int64_t vocab = s.config().vocab;
    RILL_ASSIGN_OR_RETURN(logits_bytes, file.tensor(kLastLogits, TensorDType::kF32, std::span(&vocab, 1)));
    RILL_RETURN_IF_ERROR(file.check_finite(*e).with_context("lm state"));
    logits.resize(size_t(vocab));
    std::memcpy(logits.data(), logits_bytes.data(), logits_bytes.size());
    if (saved_position == 0) return data_loss("lm state: logits saved at position 0, before any token");
  }
  const size_t expected = uploads.size() + (logits.empty() ? 0 : 1);
  if (file.entries().size() != expected) {
    // Every expected tensor was found above, so the file holds others: name the first.
    std::string other;
    for (const SafetensorsEntry& e : file.entries()) {
      const bool known = e.name == kLastLogits || std::any_of(uploads.begin(), uploads.end(),
                                                              [&](const auto& u) { return u.first->name() == e.name; });
      if (!known) {
        other = e.name;
        break;
      }
    }
    return data_loss("lm state: " + std::to_string(file.entries().size()) + " tensors, expected " +
                     std::to_string(expected) + (other.empty() ? "" : " (an unknown one: '" + other + "')"));
  }
  if (const std::string saved_sum = get("checksum"); !saved_sum.empty() || format == kFormat) {
    StateChecksum checksum(pos_text);
    for (const auto& [t, data] : uploads) checksum.add(t->name(), data);
    if (!logits_bytes.empty()) checksum.add(kLastLogits, logits_bytes);
    if (checksum.hex() != saved_sum)
      return data_loss("lm state: the checksum does not match (saved " + (saved_sum.empty() ? "none" : saved_sum) +
                       ", the contents " + checksum.hex() + "): the file is damaged");
  } else {
    log_message(MessageSeverity::kWarning, "lm state: saved without a checksum (an older rill): restored unchecked");
  }
  // An upload that fails part way (host or device memory, a lost device) leaves some tensors of the
  // file and some of the old state: reset, so a decode after it cannot run on the mix.
  *uploading = true;
  for (const auto& [t, data] : uploads)
    if (Status uploaded = s.model->ctx.upload(*t, data); !uploaded.is_ok()) {
      const Status reset = s.zero_state();
      if (!reset.is_ok())
        s.spent.mark([&] { return "a restore failed part way (" + uploaded.message() + "), and so did the reset"; });
      return uploaded.with_context(reset.is_ok()
                                       ? "lm state: restore failed part way; the session was reset to position 0"
                                       : "lm state: restore failed part way, and so did the reset (" + reset.message() +
                                             "): reset() the session before using it");
    }
  s.position = saved_position;
  s.last_logits = std::move(logits);
  s.spent.clear();
  return Status::ok();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

}  // namespace rill::lm
