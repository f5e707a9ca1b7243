// Elementwise ops the models need, each over tensors of one storage type (f32 or f16, f32
// arithmetic) unless stated: add and mul; conversion between f32 and f16; SiLU; GLU (a * act(b)); embedding gather;
// softmax and cross-entropy over a vocabulary. Backward passes where training needs them.
#pragma once

#include "rill/export.hpp"
#include "rill/ops/packed_weights.hpp"
#include "rill/sequence.hpp"
#include "rill/status.hpp"
#include "rill/tensor.hpp"

namespace rill::ops {

// out = a + b / a * b; a, b, out of one shape.
RILL_API Status add(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out);
RILL_API Status mul(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out);

// dst = src in dst's storage type (src and dst of one shape, each f32 or f16): f16 -> f32 is exact,
// f32 -> f16 rounds as the device converts (to nearest; toward zero on some drivers) and turns
// values past f16's range into +-Inf (+-65504 toward zero); one type is a copy.
RILL_API Status convert(Sequence& seq, const Tensor& src, const Tensor& dst);

// y = x * sigmoid(x); dx = dy * (s + x s (1 - s)).
RILL_API Status silu_forward(Sequence& seq, const Tensor& x, const Tensor& y);
RILL_API Status silu_backward(Sequence& seq, const Tensor& x, const Tensor& dy, const Tensor& dx);

enum class GluActivation { kIdentity = 0, kSigmoid = 1, kSilu = 2 };
// out = a * act(b); da = dy * act(b), db = dy * a * act'(b).
RILL_API Status glu_forward(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& out,
                            GluActivation act = GluActivation::kSilu);
RILL_API Status glu_backward(Sequence& seq, const Tensor& a, const Tensor& b, const Tensor& dy, const Tensor& da,
                             const Tensor& db, GluActivation act = GluActivation::kSilu);

// out[t, :] = table[ids[t], :] * scale. ids: [...] u32 (tokens = its element count); table: [vocab, dim];
// out: [tokens, dim] (any shape with that many elements). errors: [1] u32, zeroed by the op and
// counting ids >= vocab after the sequence has run (their rows are zero): read it to detect bad input.
// A table larger than the device binds at once (maxStorageBufferRange) is gathered in blocks of rows.
RILL_API Status embedding_forward(Sequence& seq, const Tensor& ids, const Tensor& table, const Tensor& out,
                                  const Tensor& errors, float scale = 1.0f);
// The same gather from a packed table stored transposed, [dim, vocab] (token t is column t): the
// layout matmul's packed B takes, so one packed matrix is both a model's embedding and its tied
// output head. out keeps the activations' storage type.
RILL_API Status embedding_forward(Sequence& seq, const Tensor& ids, const PackedWeights& table_t, const Tensor& out,
                                  const Tensor& errors, float scale = 1.0f);
// The same from a packed table kept in column blocks (upload_packed_columns: a table larger than one
// storage binding), a dispatch per block, each writing only its tokens' rows.
RILL_API Status embedding_forward(Sequence& seq, const Tensor& ids, const PackedColumnBlocks& table_t,
                                  const Tensor& out, const Tensor& errors, float scale = 1.0f);
// dtable[v, :] = sum of dy[t, :] over t with ids[t] == v, deterministic; dtable f32 [vocab, dim].
// An id >= vocab adds to no row (the forward counts such ids in its errors tensor).
RILL_API Status embedding_backward(Sequence& seq, const Tensor& ids, const Tensor& dy, const Tensor& dtable);

// probs = softmax(logits) over the last dimension; logits, probs [..., vocab].
RILL_API Status softmax_forward(Sequence& seq, const Tensor& logits, const Tensor& probs);
// Also loss[r] = logsumexp(logits[r]) - logits[r, targets[r]] (f32 [rows]); targets u32 [rows].
// A target >= vocab gives a NaN loss for that row.
RILL_API Status softmax_cross_entropy_forward(Sequence& seq, const Tensor& logits, const Tensor& targets,
                                              const Tensor& probs, const Tensor& loss);
// dlogits = (probs - onehot(targets)) * dloss[row]; dloss f32 [rows]. A target >= vocab makes its
// row's dlogits NaN, as the forward makes its loss.
RILL_API Status softmax_cross_entropy_backward(Sequence& seq, const Tensor& probs, const Tensor& targets,
                                               const Tensor& dloss, const Tensor& dlogits);

}  // namespace rill::ops
