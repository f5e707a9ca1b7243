// Parallel chunked linear attention, pass 3 of 3 (la_par_common.glsl has the form): every chunk's
// outputs at once, from the state before the chunk (P_c, left in chunk_states by la_par_scan, or
// with SPAN > 1 the chunk's state within its span plus the decayed state before the span) and the
// chunk's own positions. Workgroup (c, bh), mapped positions t0 + t for t < len:
//   out_{t0+t} = lambda^(t+1) f(a_{t0+t}) P_c + sum_{s<=t} lambda^(t-s) (f(a_{t0+t}) . g(b_{t0+s})) h(c_{t0+s})
// times phi'(x_{t0+t}) elementwise with GRAD_SCALE (the backward's dq and dk). Three products
// through shared-memory tiles, each invocation accumulating RB x RB blocks in registers (RB = 4
// neighbouring rows, whose operands it reads as one 16-byte vector per row and 4 inner steps, and
// RB strided columns, one word each; with GROUPED_COLUMNS the outputs' RB columns are neighbours,
// aligned runs of 4 words per inner step, which a compiler can load as vectors). Blocks of 8 x 8
// in a workgroup of a chunk's blocks, twice the multiply-adds per shared word, ran 1.4-1.7x slower
// on an H200 (tools/rill/bench-h200/run9-0652bae) and were removed.
//   1. the causal scores [len, len] = f(A) g(B)^T (masked, decayed), kept in shared memory; a
//      block's columns that lie wholly past its rows are not multiplied;
//   2. f(A) P_c [len, DV], TILE slices of the inner dimension at a time, scaled by lambda^(t+1);
//   3. plus scores h(C) [len, DV], TILE rows of h(C) at a time, each block only up to its own
//      last row (the causal mask's zeros are skipped).
// Without CAUSAL (the non-causal form, never decayed) every position sees the whole sequence:
// out_t = f(a_t) S with S the total state, which la_par_scan leaves in the state buffer (bound as
// chunk_states, one per head); only product 2 runs. With STATE_TRANSPOSED the states were made by
// another form whose state is this one's transpose (stored [DV, DK]; the backward's dk and dv).
// With FUSE_SCORES (causal, where every invocation owns at most one scores block and one output
// block) products 1 and 2 share one walk over the inner dimension: each TILE slice of f(A), g(B)
// and P_c is loaded once between one pair of barriers, where the separate walks load f(A) twice
// and take twice the barriers (a third of the pass's barriers and loads of f(A) go); unpaired with
// heads as wide as the chunk is long (SHARED_ROWS), an invocation's scores block and output block
// share their rows, and each load of f(A) serves both.
// With PAIRED_ROWS (causal) product 3's causal work is balanced over the invocations and walked
// without barriers: an output block is two RB-row blocks of one row-block pair, i and
// blocks - 1 - i, times RB / 2 columns (strided, or neighbours with GROUPED_COLUMNS; the same
// RB x RB accumulators), so that every invocation's rows see RB + len positions in all, where a
// block of RB rows sees from RB to len; and h(C) is staged whole in shared memory (over the tiles
// of products 1 and 2) before product 3, so that each invocation walks its own rows' positions and
// no more. Barrier-paced tiles of h(C)
// cost every step the slowest block's, which is why the causal mask's zeros cost as much as the
// rest on an H200 (tools/rill/bench-h200/FINDINGS.md).
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 9) const bool GRAD_SCALE = false;
layout(constant_id = 11) const bool CAUSAL = true;
layout(constant_id = 12) const bool STATE_TRANSPOSED = false;
layout(constant_id = 13) const bool GROUPED_COLUMNS = false;
layout(constant_id = 18) const bool FUSE_SCORES = false;
layout(constant_id = 19) const bool PAIRED_ROWS = false;
const uint RB = 4u;  // an invocation's block: RB x RB outputs
// An output block: HALVES row blocks of RB rows (a pair with PAIRED), times OUT_COLS columns.
const bool PAIRED = CAUSAL && PAIRED_ROWS;
const uint HALVES = PAIRED ? 2u : 1u;
const uint OUT_ROWS = RB * HALVES;
const uint OUT_COLS = RB / HALVES;
layout(local_size_x_id = 0) in;

#include "la_par_common.glsl"

layout(std430, binding = 0) readonly buffer A { sfloat a[]; };
layout(std430, binding = 1) readonly buffer B { sfloat b[]; };
layout(std430, binding = 2) readonly buffer C { sfloat c[]; };
layout(std430, binding = 3) readonly buffer Decay { float decay[]; };
layout(std430, binding = 4) readonly buffer ChunkStates { float chunk_states[]; };
layout(std430, binding = 5) readonly buffer X { sfloat x[]; };  // GRAD_SCALE: phi' of x scales out
layout(std430, binding = 6) writeonly buffer Out { ofloat out_[]; };

// The tiles hold CHUNKR rows (CHUNK rounded up to whole RB-row blocks), every slot written (zero
// outside the data), so the inner loops run whole 4-step vectors without clamps or bounds. The
// row-operand tiles are arrays of vec4 along their inner dimension (16-byte loads), rows padded by
// one vector: two block rows 4 apart, which one warp reads at once, then fall 16 banks apart.
const uint CHUNKR = (CHUNK + RB - 1u) / RB * RB;
const uint SROW4 = CHUNKR / 4u + 1u;                     // scores' row, in vec4
shared vec4 scores[CHUNKR * SROW4];                      // [t][s]
shared afloat power[CHUNK + 1];                          // lambda^m
const uint AROW4 = TILE / 4u + 1u;                       // a_tile's row, in vec4 (TILE: a multiple of 4)
shared vec4 a_tile[CHUNKR * AROW4];                      // [t][k]: f(a_t) on TILE inner slices
// [k][s] g(b), then [k][j] P, then [s][j] h(c). Result columns are strided over the invocations and
// g(b) is stored transposed, so neighbouring invocations read neighbouring words (la_par_common.glsl:
// shared-memory banks). Grouped output columns read runs of 4 neighbouring words of a P or h(c) row,
// which start on a 16-byte boundary (rows a multiple of 4 words), so that a compiler can load them as
// vectors; words of a row past DV hold whatever was there and feed only columns never stored. Rows
// are as wide as g(B)'s or this head's DV (a constant), not MAX_D: narrower heads take less memory.
const uint BROW = CHUNKR + 1u;
const uint OTHER_ROW = ((BROW > DV ? BROW : DV) + 3u) / 4u * 4u;
// Whether products 1 and 2 run fused: one round of blocks each (kernel_plan_attention.cpp decides
// the same from the widest form). The fused walk holds g(B) and P_c at once: the wide tile (P or
// h(C)) then starts past g(B)'s, at a multiple of 4 words (TILE is). (The comparisons are
// constants of their own: glslang 11 leaves an && chain with a comparison in it undefined where a
// later constant uses it.)
const uint CHUNK_BLOCKS = CHUNKR / RB;
const uint ROW_UNITS = PAIRED ? (CHUNK_BLOCKS + 1u) / 2u : CHUNK_BLOCKS;  // an output block's rows: a unit
const bool SCORES_FIT = CHUNK_BLOCKS * CHUNK_BLOCKS <= WG_SIZE;
const bool OUTPUTS_FIT = ROW_UNITS * ((DV + OUT_COLS - 1u) / OUT_COLS) <= WG_SIZE;
const bool FUSED = CAUSAL && FUSE_SCORES && SCORES_FIT && OUTPUTS_FIT;
// Where a chunk has as many row blocks as the outputs have column blocks (heads as wide as the
// chunk is long), the scores block an invocation owns is dealt on its output block's rows, so that
// each load of f(A)'s rows serves both products (fused_slice). Elsewhere the two dealings differ:
// made the same, one product's blocks would spread over twice the warps, each half idle, which costs
// a GPU more issue slots than the shared loads save.
const bool ROWS_AS_COLUMNS = (DV + RB - 1u) / RB == CHUNK_BLOCKS;  // (a constant of its own: see FUSED)
const bool SHARED_ROWS = FUSED && !PAIRED && ROWS_AS_COLUMNS;
const uint WIDE_AT = FUSED ? TILE * BROW : 0u;
// PAIRED: the chunk's h(C), [s][j] in rows of DV rounded up to whole 4-word runs, takes the tiles'
// place once products 1 and 2 are done.
const uint RESIDENT_ROW = (DV + 3u) / 4u * 4u;
const uint TILES_WORDS = WIDE_AT + TILE * OTHER_ROW;
const uint RESIDENT_WORDS = PAIRED ? CHUNKR * RESIDENT_ROW : 0u;
shared afloat other_tile[TILES_WORDS > RESIDENT_WORDS ? TILES_WORDS : RESIDENT_WORDS];

// One word of a vec4 row tile.
void set_word(bool in_scores, uint row, uint column, afloat value) {
  if (in_scores)
    scores[row * SROW4 + column / 4u][column % 4u] = value;
  else
    a_tile[row * AROW4 + column / 4u][column % 4u] = value;
}

// Global memory is the wait in the tile loops below: each tile's loads are issued into registers
// before the products on the tile before it (fetch_*), and stored into shared memory after the next
// barrier (store_*), so a tile costs one wait overlapped with arithmetic instead of a wait between
// two barriers. The elements e = tid + i WG_SIZE of one tile an invocation carries (unrolled: the
// arrays stay in registers) are laid out by constants, so that finding an element's row and column
// is a shift or a multiplication: a chunk-row tile is CHUNKR x TILE (e = t TILE + kk), a wide one
// TILE x DV (e = row DV + j; a transposed state e = j TILE + kk); slots past the tile's real rows
// or width hold zero.
#extension GL_EXT_control_flow_attributes : require  // [[unroll]]: the blocks' arrays stay in registers
const uint ROW_PREFETCH = (CHUNKR * TILE + WG_SIZE - 1) / WG_SIZE;
const uint WIDE_PREFETCH = (TILE * DV + WG_SIZE - 1) / WG_SIZE;
uint ab_base, c_base, state_base, t0, len;
// SPAN > 1 (causal): P_c = L_c (at state_base) + start_decay times the state before the chunk's span.
uint start_base;
afloat start_decay;

// Slot e of a chunk-row tile: position t, inner index kk; whether it holds data (t < len, kk < width).
bool row_slot(uint e, uint width, out uint t, out uint kk) {
  t = e / TILE;
  kk = e % TILE;
  return t < len && kk < width;
}

// f(a_{t0+t, k0+kk}) (a_tile) or g(b_{t0+t, k0+kk}) (the scores' transposed B tile), t < len, kk < width.
void fetch_rows(bool is_a, uint k0, uint width, out afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    uint t, kk;
    const bool live = row_slot(gl_LocalInvocationID.x + i * WG_SIZE, width, t, kk);
    // Clamped into the tile, so that the load is unconditional (and never out of bounds).
    const uint at = ab_base + la_row(t0 + min(t, len - 1u)) * DK + k0 + min(kk, width - 1u);
    r[i] = live ? (is_a ? la_f(PHI_A, afloat(a[at])) : la_f(PHI_B, afloat(b[at]))) : 0.0;
  }
}
// Every slot of the tile (the fetch left zeros outside the data).
void store_a(afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, t = e / TILE;
    if (t < CHUNKR) set_word(false, t, e % TILE, r[i]);
  }
}
void store_b(afloat r[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, t = e / TILE;
    if (t < CHUNKR) other_tile[(e % TILE) * BROW + t] = r[i];
  }
}

// Slot e of a wide tile: its row kk (data below width) and column j (< DV). The states a transposed form
// reads are stored [DV, DK]: kk runs fastest there, so that the loads stay contiguous.
bool wide_slot(bool transposed, uint e, uint width, out uint kk, out uint j) {
  kk = transposed ? e % TILE : e / DV;
  j = transposed ? e / TILE : e % DV;
  return kk < width && j < DV;
}

// Rows k0 .. k0 + width - 1 of P_c, or rows s0 .. s0 + width - 1 of h(C); into the wide tile [row][j].
void fetch_wide(bool is_state, uint row0, uint width, out afloat r[WIDE_PREFETCH]) {
  const bool transposed = is_state && STATE_TRANSPOSED;
  [[unroll]] for (uint i = 0; i < WIDE_PREFETCH; ++i) {
    uint kk, j;
    const bool live = wide_slot(transposed, gl_LocalInvocationID.x + i * WG_SIZE, width, kk, j);
    kk = min(kk, width - 1u);  // clamped: unconditional loads, never out of bounds
    j = min(j, DV - 1u);
    afloat value;
    if (is_state) {
      const uint at = STATE_TRANSPOSED ? j * DK + row0 + kk : (row0 + kk) * DV + j;
      value = chunk_states[state_base + at];
      if (CAUSAL && SPAN > 1u) value += start_decay * chunk_states[start_base + at];
    } else {
      value = la_f(PHI_C, afloat(c[c_base + la_row(t0 + row0 + kk) * DV + j]));
    }
    r[i] = live ? value : 0.0;
  }
}
// Every row of the tile, zero past `width` (the fetch left them so).
void store_wide(bool is_state, afloat r[WIDE_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < WIDE_PREFETCH; ++i) {
    uint kk, j;
    if (wide_slot(is_state && STATE_TRANSPOSED, gl_LocalInvocationID.x + i * WG_SIZE, TILE, kk, j))
      other_tile[WIDE_AT + kk * OTHER_ROW + j] = r[i];
  }
}

// An output block's columns of row `row` of the wide tile (P or h(C)): with GROUPED_COLUMNS
// neighbouring words, in aligned runs of OUT_COLS (16 bytes unpaired).
void wide_row(uint row, uint column[OUT_COLS], out afloat v[OUT_COLS]) {
  const uint at = WIDE_AT + row * OTHER_ROW;
  [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) v[q] = other_tile[at + column[q]];
}

// PAIRED: the chunk's h(C) into shared memory (zero past len), from registers loaded during the last
// slice of products 1 and 2 (where no next slice's loads are in flight), so that the loads wait
// during those products.
const uint RESIDENT_PREFETCH = PAIRED ? (CHUNKR * DV + WG_SIZE - 1u) / WG_SIZE : 1u;
void fetch_resident(out afloat r[RESIDENT_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < RESIDENT_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = e / DV, j = e % DV;
    const afloat value = la_f(PHI_C, afloat(c[c_base + la_row(t0 + min(s, len - 1u)) * DV + j]));
    r[i] = s < len ? value : 0.0;
  }
}
void store_resident(afloat r[RESIDENT_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < RESIDENT_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, s = e / DV;
    if (s < CHUNKR) other_tile[s * RESIDENT_ROW + e % DV] = r[i];
  }
}

// Product 1's inner step u of a 4-step (row k = 4 k4 + u of the staged g(B)^T): the scores block's
// columns s0 + blocks_t q for q < live_q (the rest lie past the mask), times column u of the block's
// rows of f(A), `av`.
void scores_step(vec4 av[RB], uint k, uint u, uint s0, uint blocks_t, uint live_q, inout afloat acc[RB][RB]) {
  afloat bv[RB];
  [[unroll]] for (uint q = 0; q < RB; ++q)
    if (q < live_q) bv[q] = other_tile[k * BROW + s0 + blocks_t * q];
  [[unroll]] for (uint r = 0; r < RB; ++r)
    [[unroll]] for (uint q = 0; q < RB; ++q)
      if (q < live_q) acc[r][q] += av[r][u] * bv[q];
}

// Product 1 on the staged slice: the scores block of rows r0 .. r0 + RB - 1 and columns
// s0 + blocks_t q for q < live_q.
void scores_slice(uint r0, uint s0, uint blocks_t, uint live_q, inout afloat acc[RB][RB]) {
  [[unroll]] for (uint k4 = 0; k4 < TILE / 4u; ++k4) {
    vec4 av[RB];
    [[unroll]] for (uint r = 0; r < RB; ++r) av[r] = a_tile[(r0 + r) * AROW4 + k4];
    [[unroll]] for (uint u = 0; u < 4; ++u) scores_step(av, 4u * k4 + u, u, s0, blocks_t, live_q, acc);
  }
}

// Every (t, s) of a scores block into shared memory: decayed, zero past the mask and past len
// (product 3 reads whole 4-column vectors of every row of its blocks).
void store_scores(uint r0, uint s0, uint blocks_t, afloat acc[RB][RB]) {
  [[unroll]] for (uint r = 0; r < RB; ++r)
    [[unroll]] for (uint q = 0; q < RB; ++q) {
      const uint t = r0 + r, s = s0 + blocks_t * q;
      set_word(true, t, s, t < len && s <= t ? acc[r][q] * power[min(t - s, CHUNK)] : 0.0);
    }
}

// Product 2 on the staged slice: f(A) P_c for the output block of rows r0[h] .. r0[h] + RB - 1
// (each half h) and `column`. Paired, a 4-step's P words are read once for both halves (unpaired,
// a step's words are read just before their products: fewer live registers).
void state_slice(uint r0[HALVES], uint column[OUT_COLS], inout afloat acc[OUT_ROWS][OUT_COLS]) {
  [[unroll]] for (uint k4 = 0; k4 < TILE / 4u && !PAIRED; ++k4) {
    vec4 av[RB];
    [[unroll]] for (uint r = 0; r < RB; ++r) av[r] = a_tile[(r0[0] + r) * AROW4 + k4];
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      afloat pv[OUT_COLS];
      wide_row(4u * k4 + u, column, pv);
      [[unroll]] for (uint r = 0; r < RB; ++r)
        [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[r][q] += av[r][u] * pv[q];
    }
  }
  [[unroll]] for (uint k4 = 0; k4 < TILE / 4u && PAIRED; ++k4) {
    afloat pv[4][OUT_COLS];
    [[unroll]] for (uint u = 0; u < 4; ++u) wide_row(4u * k4 + u, column, pv[u]);
    [[unroll]] for (uint h = 0; h < HALVES; ++h) {
      vec4 av[RB];
      [[unroll]] for (uint r = 0; r < RB; ++r) av[r] = a_tile[(r0[h] + r) * AROW4 + k4];
      [[unroll]] for (uint u = 0; u < 4; ++u)
        [[unroll]] for (uint r = 0; r < RB; ++r)
          [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[h * RB + r][q] += av[r][u] * pv[u][q];
    }
  }
}

// Products 1 and 2 on the staged slice with SHARED_ROWS: the invocation's output block and its scores
// block (columns s0 + blocks_t q for q < live_q; none where live_q is 0) lie on the same RB rows
// from r0, so that each 16-byte load of those rows of f(A) serves both (a quarter of the walk's
// shared-memory words); each accumulator's sum runs in the same order as in scores_slice and
// state_slice.
void fused_slice(uint r0, uint s0, uint blocks_t, uint live_q, uint column[OUT_COLS], inout afloat acc_s[RB][RB],
                 inout afloat acc[OUT_ROWS][OUT_COLS]) {
  [[unroll]] for (uint k4 = 0; k4 < TILE / 4u; ++k4) {
    vec4 av[RB];
    [[unroll]] for (uint r = 0; r < RB; ++r) av[r] = a_tile[(r0 + r) * AROW4 + k4];
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      scores_step(av, 4u * k4 + u, u, s0, blocks_t, live_q, acc_s);
      afloat pv[OUT_COLS];
      wide_row(4u * k4 + u, column, pv);
      [[unroll]] for (uint r = 0; r < RB; ++r)
        [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[r][q] += av[r][u] * pv[q];
    }
  }
}

// PAIRED product 3: the scores times the resident h(C), each half only over the positions up to its
// rows' end (the causal mask's zeros are not walked); the late half's walk covers the early one's.
// `early_steps` 0: the unit's one block (an odd count's middle) is its late half.
void resident_product(uint r0[HALVES], uint column[OUT_COLS], uint early_steps,
                      inout afloat acc[OUT_ROWS][OUT_COLS]) {
  const uint late_steps = (r0[HALVES - 1u] + RB) / 4u;
  for (uint s4 = 0; s4 < late_steps; ++s4) {
    afloat cv[4][OUT_COLS];
    [[unroll]] for (uint u = 0; u < 4; ++u)
      [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) cv[u][q] = other_tile[(4u * s4 + u) * RESIDENT_ROW + column[q]];
    [[unroll]] for (uint h = 0; h < HALVES; ++h) {
      if (h + 1u < HALVES && s4 >= early_steps) continue;
      vec4 sv[RB];
      [[unroll]] for (uint r = 0; r < RB; ++r) sv[r] = scores[(r0[h] + r) * SROW4 + s4];
      [[unroll]] for (uint u = 0; u < 4; ++u)
        [[unroll]] for (uint r = 0; r < RB; ++r)
          [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[h * RB + r][q] += sv[r][u] * cv[u][q];
    }
  }
}

// Columns q of a scores block of rows from r0 with blocks_t q > r0 + RB - 1 lie past every row of
// the block for every s0: masked, left at zero. The bound depends on r0 only, shared by blocks_t
// neighbouring invocations.
uint live_score_columns(uint r0, uint blocks_t) { return min(RB, (r0 + RB - 1u) / blocks_t + 1u); }

void main() {
  const uint chunk = gl_WorkGroupID.x, bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  t0 = (p.first_chunk + chunk) * CHUNK;
  len = min(CHUNK, p.n - t0);
  const afloat lambda = HAS_DECAY ? decay[bh % p.heads] : 1.0;
  ab_base = bh * p.n * DK;
  c_base = bh * p.n * DV;
  state_base = (CAUSAL ? bh * p.window + chunk : bh) * DK * DV;
  start_base = p.states_base + (bh * spans_in_window() + chunk / SPAN) * DK * DV;
  start_decay = HAS_DECAY ? decay_pow(lambda, afloat((chunk % SPAN) * CHUNK)) : 1.0;  // earlier chunks are whole
  for (uint m = tid; m <= len; m += WG_SIZE) power[m] = HAS_DECAY ? decay_pow(lambda, afloat(m)) : 1.0;
  const uint blocks_t = (len + RB - 1u) / RB;

  // 1. Scores: RB x RB blocks of (t, s), in a walk of their own unless FUSED (below).
  for (uint round = 0; CAUSAL && !FUSED && round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint r0 = owner ? blk / blocks_t * RB : 0, s0 = owner ? blk % blocks_t : 0;  // columns s0 + blocks_t q
    const uint live_q = live_score_columns(r0, blocks_t);
    afloat acc[RB][RB];
    [[unroll]] for (uint r = 0; r < RB; ++r)
      [[unroll]] for (uint q = 0; q < RB; ++q) acc[r][q] = 0.0;
    afloat next_a[ROW_PREFETCH], next_b[ROW_PREFETCH];
    uint width = min(TILE, DK);
    fetch_rows(true, 0, width, next_a);
    fetch_rows(false, 0, width, next_b);
    for (uint k0 = 0; k0 < DK; k0 += TILE) {
      barrier();  // the previous tiles read -> overwritten
      store_a(next_a);
      store_b(next_b);
      barrier();  // tiles stored -> read by every block owner
      if (k0 + TILE < DK) {  // the next slice's loads, in flight during the products below
        width = min(TILE, DK - k0 - TILE);
        fetch_rows(true, k0 + TILE, width, next_a);
        fetch_rows(false, k0 + TILE, width, next_b);
      }
      if (owner) scores_slice(r0, s0, blocks_t, live_q, acc);
    }
    if (owner) store_scores(r0, s0, blocks_t, acc);
  }

  // 2 and 3. Outputs: RB x RB blocks of (t, j); PAIRED, two RB-row halves times OUT_COLS columns.
  const uint blocks_j = (DV + OUT_COLS - 1u) / OUT_COLS;
  const uint units_t = PAIRED ? (blocks_t + 1u) / 2u : blocks_t;
  for (uint round = 0; round * WG_SIZE < units_t * blocks_j; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < units_t * blocks_j;
    // Columns j0 + blocks_j q, or with GROUPED_COLUMNS OUT_COLS j0 + q.
    const uint unit = owner ? blk / blocks_j : 0, j0 = owner ? blk % blocks_j : 0;
    // The halves' first rows: unit i's row block, and paired, row block blocks_t - 1 - i. An odd
    // count's middle unit has one block: its late half, the early one walking no positions and
    // stored nowhere (its products repeat the late half's).
    uint r0[HALVES];
    r0[0] = unit * RB;
    if (PAIRED) r0[HALVES - 1u] = (blocks_t - 1u - unit) * RB;
    const bool early_live = !PAIRED || r0[0] != r0[HALVES - 1u];
    // Strided columns past DV read a clamped (loaded) column; grouped ones past DV read words no
    // fetch wrote. Neither is written out.
    uint column[OUT_COLS];
    [[unroll]] for (uint q = 0; q < OUT_COLS; ++q)
      column[q] = GROUPED_COLUMNS ? OUT_COLS * j0 + q : min(j0 + blocks_j * q, DV - 1);
    afloat acc[OUT_ROWS][OUT_COLS];
    [[unroll]] for (uint r = 0; r < OUT_ROWS; ++r)
      [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[r][q] = 0.0;
    // f(A) P_c over TILE slices of the inner dimension; FUSED, the scores' products in the same walk
    // (one round): SHARED_ROWS, an output block's owner owns the scores block on its rows at column
    // block j0 (blocks_j is the chunk's row blocks: in a shorter last chunk, those past its own are
    // left), else invocation tid owns scores block tid.
    const bool s_owner = SHARED_ROWS ? owner && j0 < blocks_t : FUSED && tid < blocks_t * blocks_t;
    const uint sr0 = SHARED_ROWS ? r0[0] : s_owner ? tid / blocks_t * RB : 0;
    const uint s0 = !s_owner ? 0 : SHARED_ROWS ? j0 : tid % blocks_t;
    const uint live_q = live_score_columns(sr0, blocks_t);
    afloat acc_s[RB][RB];
    [[unroll]] for (uint r = 0; r < RB; ++r)
      [[unroll]] for (uint q = 0; q < RB; ++q) acc_s[r][q] = 0.0;
    afloat next_a[ROW_PREFETCH], next_b[ROW_PREFETCH], next_p[WIDE_PREFETCH];
    afloat resident[RESIDENT_PREFETCH];
    uint width = min(TILE, DK);
    fetch_rows(true, 0, width, next_a);
    if (FUSED) fetch_rows(false, 0, width, next_b);
    fetch_wide(true, 0, width, next_p);
    for (uint k0 = 0; k0 < DK; k0 += TILE) {
      barrier();  // the previous tiles (and the scores) read -> overwritten
      store_a(next_a);
      if (FUSED) store_b(next_b);
      store_wide(true, next_p);
      barrier();  // tiles stored -> read by every block owner
      if (k0 + TILE < DK) {  // the next slice's loads, in flight during the products below
        width = min(TILE, DK - k0 - TILE);
        fetch_rows(true, k0 + TILE, width, next_a);
        if (FUSED) fetch_rows(false, k0 + TILE, width, next_b);
        fetch_wide(true, k0 + TILE, width, next_p);
      } else if (PAIRED) {
        fetch_resident(resident);
      }
      if (SHARED_ROWS) {
        if (owner) fused_slice(r0[0], s0, blocks_t, s_owner ? live_q : 0u, column, acc_s, acc);
      } else {
        if (s_owner) scores_slice(sr0, s0, blocks_t, live_q, acc_s);
        if (owner) state_slice(r0, column, acc);
      }
    }
    if (s_owner) store_scores(sr0, s0, blocks_t, acc_s);  // read after product 3's first barriers
    [[unroll]] for (uint r = 0; r < OUT_ROWS; ++r)
      [[unroll]] for (uint q = 0; q < OUT_COLS; ++q)
        acc[r][q] *= power[min(r0[r / RB] + r % RB, len - 1) + 1];
    if (PAIRED) {
      // Plus the causal scores times the chunk's h(C), staged whole: one pair of barriers.
      barrier();  // the tiles (and the scores) read -> overwritten; the scores stored
      store_resident(resident);
      barrier();  // h(C) stored -> read by every block owner
      if (owner) resident_product(r0, column, early_live ? (r0[0] + RB) / 4u : 0u, acc);
      // (A next round's walk stores its tiles over h(C) after a barrier of its own.)
    }
    // Unpaired: plus the causal scores times h(C), TILE rows of h(C) at a time.
    afloat next_c[WIDE_PREFETCH];
    uint rows = min(TILE, len);
    if (CAUSAL && !PAIRED) fetch_wide(false, 0, rows, next_c);
    for (uint s0 = 0; CAUSAL && !PAIRED && s0 < len; s0 += TILE) {
      barrier();  // the previous tiles read -> overwritten
      store_wide(false, next_c);
      barrier();  // tile stored -> read by every block owner
      if (s0 + TILE < len) {  // the next rows' loads, in flight during the products below
        rows = min(TILE, len - s0 - TILE);
        fetch_wide(false, s0 + TILE, rows, next_c);
      }
      if (!owner) continue;
      // scores[t][s] is 0 for s > t: rows of h(C) past the block's last row r0 + RB - 1 add
      // nothing, so the causal half of the product is skipped rather than multiplied by zero (in
      // whole 4-row steps: s0 and r0 + RB are multiples of 4). An owner's rows are shared by the
      // blocks_j neighbouring invocations, so whole subgroups stop together.
      const uint steps = min(TILE, r0[0] + RB > s0 ? r0[0] + RB - s0 : 0u) / 4u;
      for (uint s4 = 0; s4 < steps; ++s4) {
        vec4 sv[RB];
        [[unroll]] for (uint r = 0; r < RB; ++r) sv[r] = scores[(r0[0] + r) * SROW4 + s0 / 4u + s4];
        [[unroll]] for (uint u = 0; u < 4; ++u) {
          afloat cv[OUT_COLS];
          wide_row(4u * s4 + u, column, cv);
          [[unroll]] for (uint r = 0; r < RB; ++r)
            [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) acc[r][q] += sv[r][u] * cv[q];
        }
      }
    }
    if (!owner) continue;
    [[unroll]] for (uint r = 0; r < OUT_ROWS; ++r)
      [[unroll]] for (uint q = 0; q < OUT_COLS; ++q) {
        const uint t = r0[r / RB] + r % RB, j = GROUPED_COLUMNS ? OUT_COLS * j0 + q : j0 + blocks_j * q;
        if ((r < RB && !early_live) || t >= len || j >= DV) continue;
        const uint at = c_base + la_row(t0 + t) * DV + j;
        afloat val = acc[r][q];
        if (GRAD_SCALE) val *= phi_grad(afloat(x[at]));
        out_[at] = to_ofloat(val);
      }
  }
}
