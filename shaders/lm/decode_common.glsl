// What the fused decoding kernels share (decode_mix.glsl, decode_ffn.glsl, decode_logits.glsl):
// weight matrices in every storage form, the shared input row and its RMSNorm, and a
// matrix-vector product over the workgroup.
//
// The includer declares first: the spec constants WG_SIZE, IN_MAX and OUT_MAX (shared row
// lengths), HAS_GAIN, its push block p (with width, group and eps) and WEIGHT_BINDING (the first
// weight binding); then instantiates RILL_DECODE_WEIGHT(i) and RILL_DECODE_DOT(i) for its matrices
// i = 0, 1, ... and defines column_dot(), column_groups() and input_gain() (declared below).
//
// LANE_GROUPS > 0 (every matrix's columns and the head size a multiple of 4 LANE_GROUPS): each
// invocation takes 4 LANE_GROUPS adjacent columns with LANE_GROUPS loads per row (vec4s, int8
// words or pairs of f16 words); the input value each row reads serves them all. On lavapipe a
// load otherwise costs a loop over the lanes for every single weight. On a GPU a token's products
// are a few columns over many rows, so their time is each invocation's serial walk over its rows:
// four columns per invocation leave four times as many invocations to split the rows.
//
// Weights [batch, rows, cols] row-major, one form per compiled kernel: dense in the storage type
// (binding WEIGHT_BINDING + i), W_F16 (two halves per word, binding WEIGHT_BINDING + i), W_INT8 or
// W_INT4 (four or eight per word, words at WEIGHT_BINDING + 2 i, f32 group scales at
// WEIGHT_BINDING + 2 i + 1), as
// rill/ops/packed_weights.hpp lays them out; W_TEXEL: read through uniform texel buffers instead of
// storage buffers (dense f32 as texels of 4 floats, packed words as texels of 4 u32).
#extension GL_EXT_control_flow_attributes : require
#include "contract/matmul.glsl"  // values per packed word
#include "half_bits.glsl"
// A tree over shared memory, the same on every device: the few reductions per dispatch do not
// need a subgroup-arithmetic variant of every kernel.
#define RILL_NO_SUBGROUP_ARITHMETIC
#include "rill_reduce.glsl"
#include "rms_inverse.glsl"

layout(constant_id = 12) const uint LANE_GROUPS = 0;
const uint LANE_SLOTS = LANE_GROUPS > 0u ? LANE_GROUPS : 1u;  // a private array's length

// Rows whose weight loads a product issues together before their FMAs: one memory wait per batch
// instead of one per row where a GPU's compiler would otherwise wait row by row (the same sums
// in the same order either way; the plan's row_batch).
layout(constant_id = 13) const uint ROW_BATCH = 1;
// Texel kernels: inputs by subgroup shuffles where matvec finds whole subgroups per matrix (below).
layout(constant_id = 14) const bool X_SHUFFLE = false;
bool mv_shuffled = false;  // the current pass of matvec reads its inputs by shuffles
// X_SHUFFLE (texel kernels of CPU drivers, whose workgroups are one subgroup): a product's input
// row reaches the lanes by subgroup shuffles, each lane loading one of every 8 rows (X_LANE) and
// row r + u coming from lane u (X_AT), where lavapipe runs a shared-memory load as a loop over the
// lanes (one per row per lane otherwise). matvec turns it on for the passes whose subgroups stay
// within one matrix: the shuffles need every lane in the same branch. Dense f32 and f16 weights
// take it (int8 ran slower with it: the plan says why); other kernels compile the branch out.
#if defined(W_TEXEL)
#extension GL_KHR_shader_subgroup_shuffle : require
#define RILL_SHUFFLED mv_shuffled
#define RILL_X_LANE(r) mv_in[(r) + min(gl_SubgroupInvocationID, 7u)]
#define RILL_X_AT(x_lane, u) subgroupShuffle(x_lane, u)
#else
#define RILL_SHUFFLED false
#define RILL_X_LANE(r) 0.0
#define RILL_X_AT(x_lane, u) x_lane
#endif

shared float mv_in[IN_MAX];    // the input of the current matrix-vector product
shared float mv_out[OUT_MAX];  // its results
const uint GROUP_COLUMNS = 4u * LANE_SLOTS;  // an invocation's adjacent columns (LANE_GROUPS > 0)
// Partial sums of row slices: one per invocation, or a group's columns each.
shared float mv_split[WG_SIZE * (LANE_GROUPS > 0u ? GROUP_COLUMNS : 1u)];

#if defined(W_INT8) || defined(W_INT4)
// int8 (four a word) or int4 (eight) with group scales.
#if defined(W_INT4)
const uint W_PER_WORD = kPackedInt4PerWord;
#else
const uint W_PER_WORD = kPackedInt8PerWord;
#endif
const uint W_BITS = 32u / W_PER_WORD;
#if defined(W_TEXEL)
// int8 words read as texels of 4 (a usamplerBuffer) and the scales as texels of 4 columns (CPU
// drivers): with LANE_GROUPS = 4 (the plan's condition) an invocation's 16 columns of a row are one
// texel of words (int4: half of one, rows of whole texel pairs of words) and its scales of a group
// four texels, each one gather on lavapipe where a storage-buffer load loops over the lanes for
// every word and scale.
#define RILL_INT8_DECLARE(i)                                                           \
  layout(binding = WEIGHT_BINDING + 2 * i) uniform usamplerBuffer word_texels##i;      \
  layout(binding = WEIGHT_BINDING + 2 * i + 1) uniform samplerBuffer scale_texels##i;
#define RILL_INT8_WORD(i, k) texelFetch(word_texels##i, int((k) / 4u))[(k) % 4u]
#define RILL_INT8_SCALE(i, k) texelFetch(scale_texels##i, int((k) / 4u))[(k) % 4u]
// An invocation's words of a row from `base` (a multiple of 4): one texel, fetched once (ROW), then
// word q of it; its group's scales of columns 4 q .. 4 q + 3 from `s` (a multiple of 4).
#define RILL_INT8_ROW(i, base) ivec4(texelFetch(word_texels##i, int((base) / 4u)))
#if defined(W_INT4)
#define RILL_INT8_ROW_WORD(i, row, base, q) (((base) & 2u) != 0u ? row[2u + (q)] : row[q])
#else
#define RILL_INT8_ROW_WORD(i, row, base, q) row[q]
#endif
#define RILL_INT8_SCALES4(i, s, q) texelFetch(scale_texels##i, int((s) / 4u + (q)))
#else
#define RILL_INT8_DECLARE(i)                                                                             \
  layout(std430, binding = WEIGHT_BINDING + 2 * i) readonly buffer Words##i { uint words##i[]; };        \
  layout(std430, binding = WEIGHT_BINDING + 2 * i + 1) readonly buffer Scales##i { float scales##i[]; };
#define RILL_INT8_WORD(i, k) words##i[k]
#define RILL_INT8_SCALE(i, k) scales##i[k]
#define RILL_INT8_ROW(i, base) ivec4(0)
#define RILL_INT8_ROW_WORD(i, row, base, q) int(words##i[(base) + (q)])
#define RILL_INT8_SCALES4(i, s, q) \
  vec4(scales##i[(s) + 4u * (q)], scales##i[(s) + 4u * (q) + 1u], scales##i[(s) + 4u * (q) + 2u], scales##i[(s) + 4u * (q) + 3u])
#endif
// Group q of an invocation's columns (c + 4 q .. c + 4 q + 3) in the row whose words start at `base`
// (c's word): int8, word q's four bytes; int4, the half of word (c % 8 / 4 + q) / 2 that holds
// them, its nibbles sign-extended by the arithmetic shift.
#if defined(W_INT4)
// c's half of its word: 0 whenever an invocation's columns are whole words (LANE_GROUPS even), which
// the compiler then folds, so every group's word and half are constants.
#define RILL_Q4_HALF(c) (LANE_GROUPS % 2u == 0u ? 0u : (c) % 8u / 4u)
#define RILL_QUARTET_WORD(i, row_words, base, c, q) RILL_INT8_ROW_WORD(i, row_words, base, (RILL_Q4_HALF(c) + (q)) / 2u)
#define RILL_QUARTET_OF(word, c, q) \
  vec4((ivec4(word) << ((RILL_Q4_HALF(c) + (q)) % 2u == 0u ? ivec4(28, 24, 20, 16) : ivec4(12, 8, 4, 0))) >> 28)
#else
#define RILL_QUARTET_WORD(i, row_words, base, c, q) RILL_INT8_ROW_WORD(i, row_words, base, q)
#define RILL_QUARTET_OF(word, c, q) \
  vec4(bitfieldExtract(word, 0, 8), bitfieldExtract(word, 8, 8), bitfieldExtract(word, 16, 8), bitfieldExtract(word, 24, 8))
#endif
#define RILL_DECODE_WEIGHT(i)                                                                                  \
  RILL_INT8_DECLARE(i)                                                                                         \
  float weight##i(uint b, uint r, uint c, uint rows, uint cols) {                                              \
    const uint per_row = (cols + W_PER_WORD - 1u) / W_PER_WORD;                                                \
    const uint word = RILL_INT8_WORD(i, (b * rows + r) * per_row + c / W_PER_WORD);                           \
    const float q = float(bitfieldExtract(int(word), int((c % W_PER_WORD) * W_BITS), int(W_BITS)));           \
    return q * RILL_INT8_SCALE(i, (b * ((rows + p.group - 1u) / p.group) + r / p.group) * cols + c);          \
  }                                                                                                            \
  void dotg_##i(uint b, uint c, uint rows, uint cols, uint row0, uint r0, uint r1, out vec4 res[LANE_SLOTS]) { \
    const uint per_row = (cols + W_PER_WORD - 1u) / W_PER_WORD, w = c / W_PER_WORD;                            \
    const uint groups = (rows + p.group - 1u) / p.group;                                                      \
    vec4 acc[LANE_SLOTS], part[LANE_SLOTS];                                                                  \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] = vec4(0.0);                                     \
    for (uint r = r0; r < r1;) {                                                                               \
      const uint g = (row0 + r) / p.group, end = min(r1, (g + 1u) * p.group - row0);                           \
      [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) part[q] = vec4(0.0);                                  \
      for (; r < end; ++r) {                                                                                   \
        const uint base = (b * rows + row0 + r) * per_row + w;                                                 \
        const ivec4 row_words = RILL_INT8_ROW(i, base);                                                        \
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) {                                                   \
          const int word = RILL_QUARTET_WORD(i, row_words, base, c, q);                                        \
          part[q] += mv_in[r] * RILL_QUARTET_OF(word, c, q);                                                   \
        }                                                                                                      \
      }                                                                                                        \
      const uint s = (b * groups + g) * cols + c;                                                              \
      [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)                                                       \
        acc[q] += part[q] * RILL_INT8_SCALES4(i, s, q);                                                        \
    }                                                                                                          \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) res[q] = acc[q];                                        \
  }
#elif defined(W_F16)
#if defined(W_TEXEL)
// f16 words read as texels of 4 (a usamplerBuffer; CPU drivers): with LANE_GROUPS 2 or 4 (the plan's
// condition) an invocation's 8 or 16 columns of a row are one or two whole texels, each one gather
// on lavapipe where a storage-buffer load loops over the lanes for every word.
#define RILL_F16_DECLARE(i) layout(binding = WEIGHT_BINDING + i) uniform usamplerBuffer word_texels##i;
#define RILL_F16_WORD(i, k) texelFetch(word_texels##i, int((k) / 4u))[(k) % 4u]
// ws[q] = the words 2 q and 2 q + 1 of an invocation's row from `base` (a multiple of 4).
#define RILL_F16_ROW(i, base, ws)                                        \
  [[unroll]] for (uint t = 0u; t < LANE_GROUPS / 2u; ++t) {              \
    const uvec4 texel = texelFetch(word_texels##i, int((base) / 4u + t)); \
    ws[2u * t] = texel.xy;                                               \
    ws[2u * t + 1u] = texel.zw;                                          \
  }
#else
#define RILL_F16_DECLARE(i) layout(std430, binding = WEIGHT_BINDING + i) readonly buffer Words##i { uint words##i[]; };
#define RILL_F16_WORD(i, k) words##i[k]
#define RILL_F16_ROW(i, base, ws) \
  [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) ws[q] = uvec2(words##i[(base) + 2u * q], words##i[(base) + 2u * q + 1u]);
#endif
#define RILL_DECODE_WEIGHT(i)                                                                                  \
  RILL_F16_DECLARE(i)                                                                                          \
  float weight##i(uint b, uint r, uint c, uint rows, uint cols) {                                              \
    const uint per_row = (cols + kPackedF16PerWord - 1u) / kPackedF16PerWord;                                 \
    const vec2 pair = rill_unpack_half2(RILL_F16_WORD(i, (b * rows + r) * per_row + c / kPackedF16PerWord));   \
    return c % kPackedF16PerWord == 0u ? pair.x : pair.y;                                                      \
  }                                                                                                            \
  void dotg_##i(uint b, uint c, uint rows, uint cols, uint row0, uint r0, uint r1, out vec4 res[LANE_SLOTS]) { \
    const uint per_row = (cols + kPackedF16PerWord - 1u) / kPackedF16PerWord, w = c / kPackedF16PerWord;       \
    vec4 acc[LANE_SLOTS];                                                                                     \
    uvec2 ws[ROW_BATCH][LANE_SLOTS];                                                                          \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] = vec4(0.0);                                     \
    uint r = r0;                                                                                               \
    if (RILL_SHUFFLED)                                                                                         \
      for (; r + 8u <= r1; r += 8u) {                                                                          \
        const float x_lane = RILL_X_LANE(r);                                                                   \
        [[unroll]] for (uint u = 0u; u < 8u; ++u) {                                                            \
          const float x = RILL_X_AT(x_lane, u);                                                                \
          RILL_F16_ROW(i, (b * rows + row0 + r + u) * per_row + w, ws[0])                                      \
          [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)                                                   \
            acc[q] += x * vec4(rill_unpack_half2(ws[0][q].x), rill_unpack_half2(ws[0][q].y));                  \
        }                                                                                                      \
      }                                                                                                        \
    for (; r + ROW_BATCH <= r1; r += ROW_BATCH) {                                                              \
      [[unroll]] for (uint u = 0u; u < ROW_BATCH; ++u) { RILL_F16_ROW(i, (b * rows + row0 + r + u) * per_row + w, ws[u]) } \
      [[unroll]] for (uint u = 0u; u < ROW_BATCH; ++u)                                                         \
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)                                                     \
          acc[q] += mv_in[r + u] * vec4(rill_unpack_half2(ws[u][q].x), rill_unpack_half2(ws[u][q].y));         \
    }                                                                                                          \
    for (; r < r1; ++r) {                                                                                      \
      RILL_F16_ROW(i, (b * rows + row0 + r) * per_row + w, ws[0])                                              \
      [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)                                                       \
        acc[q] += mv_in[r] * vec4(rill_unpack_half2(ws[0][q].x), rill_unpack_half2(ws[0][q].y));               \
    }                                                                                                          \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) res[q] = acc[q];                                        \
  }
#else
// Dense weights, 4 adjacent columns per vec4: from a storage buffer, or (W_TEXEL, f32) through a
// uniform texel buffer of 4-float texels (on lavapipe a texel fetch gathers a lane's 16 bytes at
// once; a storage-buffer load is a bounds-checked loop over the lanes per component).
#if defined(W_TEXEL)
#define RILL_DENSE_DECLARE(i) layout(binding = WEIGHT_BINDING + i) uniform samplerBuffer texels##i;
#define RILL_DENSE_VEC4(i, v) texelFetch(texels##i, int(v))
// The view covers whole texels (texel_views.hpp), so the last partial one reads in bounds.
#define RILL_DENSE_SCALAR(i, k) texelFetch(texels##i, int((k) / 4u))[(k) % 4u]
#define RILL_DENSE_SHUFFLED_ROWS(i)                                                                 \
  if (RILL_SHUFFLED)                                                                               \
    for (; r + 8u <= r1; r += 8u, k += 8u * stride) {                                              \
      const float x_lane = RILL_X_LANE(r);                                                         \
      [[unroll]] for (uint u = 0u; u < 8u; ++u) {                                                  \
        const float x = RILL_X_AT(x_lane, u);                                                      \
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] += x * RILL_DENSE_VEC4(i, k + u * stride + q); \
      }                                                                                            \
    }
#else
#define RILL_DENSE_SHUFFLED_ROWS(i)
// The same buffer as scalars too: a matrix of an odd element count ends inside a vec4, past the
// bound range, where the element-wise reads reach (undefined without robust buffer access).
#define RILL_DENSE_DECLARE(i)                                                                   \
  layout(std430, binding = WEIGHT_BINDING + i) readonly buffer Dense##i { svec4 dense##i[]; }; \
  layout(std430, binding = WEIGHT_BINDING + i) readonly buffer DenseScalars##i { sfloat dense_scalars##i[]; };
#define RILL_DENSE_VEC4(i, v) vec4(dense##i[v])
#define RILL_DENSE_SCALAR(i, k) float(dense_scalars##i[k])
#endif
#define RILL_DECODE_WEIGHT(i)                                                                                  \
  RILL_DENSE_DECLARE(i)                                                                                        \
  float weight##i(uint b, uint r, uint c, uint rows, uint cols) {                                              \
    return RILL_DENSE_SCALAR(i, (b * rows + r) * cols + c);                                                    \
  }                                                                                                            \
  void dotg_##i(uint b, uint c, uint rows, uint cols, uint row0, uint r0, uint r1, out vec4 res[LANE_SLOTS]) { \
    vec4 acc[LANE_SLOTS], w[ROW_BATCH][LANE_SLOTS];                                                           \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] = vec4(0.0);                                     \
    const uint stride = cols / 4u;                                                                             \
    uint k = ((b * rows + row0 + r0) * cols + c) / 4u, r = r0;                                                 \
    RILL_DENSE_SHUFFLED_ROWS(i)                                                                                \
    for (; r + ROW_BATCH <= r1; r += ROW_BATCH, k += ROW_BATCH * stride) {                                     \
      [[unroll]] for (uint u = 0u; u < ROW_BATCH; ++u)                                                         \
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) w[u][q] = RILL_DENSE_VEC4(i, k + u * stride + q);   \
      [[unroll]] for (uint u = 0u; u < ROW_BATCH; ++u)                                                         \
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] += mv_in[r + u] * w[u][q];                   \
    }                                                                                                          \
    for (; r < r1; ++r, k += stride)                                                                           \
      [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) acc[q] += mv_in[r] * RILL_DENSE_VEC4(i, k + q);       \
    [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q) res[q] = acc[q];                                        \
  }
#endif

// sum over r in [r0, r1) of mv_in[r] * W_i[b, row0 + r, c] for W_i [.., rows, cols].
#define RILL_DECODE_DOT(i)                                                                        \
  float dot##i(uint b, uint c, uint rows, uint cols, uint row0, uint r0, uint r1) {               \
    float acc = 0.0;                                                                              \
    for (uint r = r0; r < r1; ++r) acc = fma(mv_in[r], weight##i(b, row0 + r, c, rows, cols), acc); \
    return acc;                                                                                   \
  }

// Item j of a product (`phase` tells the includer's products apart), over input rows [r0, r1);
// column_groups: items j .. j + GROUP_COLUMNS - 1, 4 per vector (j a multiple of GROUP_COLUMNS).
float column_dot(uint phase, uint j, uint r0, uint r1);
void column_groups(uint phase, uint j, uint r0, uint r1, out vec4 res[LANE_SLOTS]);
// The gain of the input row's RMSNorm at i (1 without gains).
float input_gain(uint i);

// mv_out[j] = column_dot(phase, j, 0, rows) for j < n. Narrow products split the rows over the
// workgroup (slice s of `split`: rows [s rows / split, (s + 1) rows / split)) and sum the slices in
// order, so every item's bits are the same on every run. `block`: the columns one branch of
// column_dot / column_groups serves (a product over several matrices: one matrix's; else n).
// Neighbouring invocations take neighbouring columns of one block, then the next row slice, then
// the next block: a GPU subgroup then stays within one matrix, where interleaving the matrices
// over its lanes made it walk each matrix's rows one branch after another (the same sums either
// way), and its loads still run along a row's contiguous columns.
// Call with mv_in complete (after a barrier); returns after a barrier.
void matvec(uint phase, uint n, uint rows, uint block) {
  const uint lid = gl_LocalInvocationID.x;
  const bool grouped = LANE_GROUPS > 0u && n % GROUP_COLUMNS == 0u;
  const uint units = grouped ? n / GROUP_COLUMNS : n;  // what one invocation computes per slice
  const uint split = max(1u, WG_SIZE / max(units, 1u));
  // Units per block (the whole product where blocks do not divide it into whole units).
  uint ub = grouped ? block / GROUP_COLUMNS : block;
  if (ub == 0u || (grouped && block % GROUP_COLUMNS != 0u) || units % ub != 0u) ub = max(units, 1u);
  // Unit g and row slice s of invocation lid < units * split (split > 1).
  const uint per = ub * split, g = (lid / per) * ub + lid % ub, s = (lid % per) / ub;
  if (grouped) {
    vec4 res[LANE_SLOTS];
    if (split == 1u) {
      // Every pass of whole subgroups within one block (one matrix): the shuffles' uniform control.
      mv_shuffled = X_SHUFFLE && units % WG_SIZE == 0u && ub % WG_SIZE == 0u;
      for (uint gg = lid; gg < units; gg += WG_SIZE) {
        column_groups(phase, gg * GROUP_COLUMNS, 0u, rows, res);
        [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)
          [[unroll]] for (uint e = 0u; e < 4u; ++e) mv_out[gg * GROUP_COLUMNS + 4u * q + e] = res[q][e];
      }
      mv_shuffled = false;
    } else if (lid < units * split) {
      // Slice s of group g: its columns' partial sums at s n + g GROUP_COLUMNS + ...
      column_groups(phase, g * GROUP_COLUMNS, s * rows / split, (s + 1u) * rows / split, res);
      [[unroll]] for (uint q = 0u; q < LANE_GROUPS; ++q)
        [[unroll]] for (uint e = 0u; e < 4u; ++e) mv_split[(s * units + g) * GROUP_COLUMNS + 4u * q + e] = res[q][e];
    }
  } else if (split == 1u) {
    for (uint j = lid; j < n; j += WG_SIZE) mv_out[j] = column_dot(phase, j, 0u, rows);
  } else if (lid < n * split) {
    mv_split[s * n + g] = column_dot(phase, g, s * rows / split, (s + 1u) * rows / split);
  }
  if (split > 1u) {
    barrier();  // slices written -> summed (item j of slice s at s n + j, either way)
    for (uint j = lid; j < n; j += WG_SIZE) {
      float sum = 0.0;
      for (uint t = 0u; t < split; ++t) sum += mv_split[t * n + j];
      mv_out[j] = sum;
    }
  }
  barrier();  // results written -> read; the input may be overwritten
}

// mv_in[i] = RMSNorm(mv_in)[i] * input_gain(i) over i < p.width, rounded to storage as the per-op
// path stores its normalized rows. Every invocation reads back only the elements it wrote (the
// same i = lid + k WG_SIZE walk as the caller's), and returns after a barrier.
void normalize_input() {
  const uint lid = gl_LocalInvocationID.x;
  float ss = 0.0;
  for (uint i = lid; i < p.width; i += WG_SIZE) ss += mv_in[i] * mv_in[i];
  const float r = rms_inverse(rill_workgroup_sum(ss), float(p.width), p.eps);
  for (uint i = lid; i < p.width; i += WG_SIZE) mv_in[i] = rill_storage_round(mv_in[i] * r * input_gain(i));
  barrier();
}
