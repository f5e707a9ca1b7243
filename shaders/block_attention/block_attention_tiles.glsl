// The shared-memory tile products of the GPUs' block-attention kernels
// (block_attention_fwd_tiled.glsl, block_attention_bwd_tiled.glsl, and for blocks past 64 the
// flash kernels block_attention_fwd_flash.glsl, block_attention_bwd_flash.glsl): 4 x 4 blocks of
// results in each invocation's registers, operands streamed through TILE-wide tiles. A product
// spans ROWS rows: a whole block of up to 64, or a 64-row tile of a longer block.
//
// Shared-memory banks: an invocation's 4 result columns are strided by the number of column groups
// (column c of group g is g + groups * c), so a warp's neighbouring invocations read neighbouring
// words; the operand whose rows become result columns is stored transposed, its rows padded by one
// word. The 4 neighbouring result rows an invocation owns read their operand as 16-byte vectors
// (the row tile and the scores are arrays of vec4, rows padded by one vector): one load per row and
// 4 inner steps, or per step for the 4 rows of the transposed scores. With 4 contiguous columns and
// unpadded rows the reads were 16-way conflicts on 32 banks.
//
// Every slot of a tile is written (zero outside the block's data), over the block rounded up to
// whole 4-row blocks (BLOCK4), so the inner loops run whole 4-step vectors without clamps. Tile
// slots map to rows and columns by constants (TILE, DK, DV), so that the index arithmetic is shifts
// or multiplications rather than runtime divisions. With CAUSAL, steps that only meet the mask's
// zeros are skipped: `masked` says so per call (the flash kernels' diagonal tiles only).
//
// Declared here for the kernels: their specialization constants, the scores and the two tiles. The
// includer sets `len` (the rows of the block, or of its tiles) and defines operand(which, row, x)
// (element x of row `row` of operand `which`) and store_result(which, row, col, value)
// (scores_product's result, by its operand b).
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BLOCK = 64;  // past 64 only in the flash kernels
layout(constant_id = 2) const bool CAUSAL = true;
layout(constant_id = 3) const uint TILE = 16;   // a multiple of 4
layout(constant_id = 4) const uint DK = 64;     // the head widths, <= MAX_D
layout(constant_id = 5) const uint DV = 64;
layout(local_size_x_id = 0) in;
#define MAX_D 128u

const uint ROWS = BLOCK < 64u ? BLOCK : 64u;  // a product's rows (the scores live in shared memory)
const uint BLOCK4 = (ROWS + 3u) / 4u * 4u;
const uint SROW4 = BLOCK4 / 4u + 1u;      // the scores' row, in vec4
shared vec4 scores[BLOCK4 * SROW4];       // [t][s]: logits or P, then probabilities or dS
const uint TROW4 = TILE / 4u + 1u;        // row_tile's row, in vec4
shared vec4 row_tile[BLOCK4 * TROW4];     // [row][x]: a TILE-wide slice of the block's rows
const uint OROW = BLOCK4 + 1u;            // other_tile's row for [x][row] slices (<= MAX_D)
shared afloat other_tile[TILE * MAX_D];   // [x][row] slices, or [x][col] tiles (row stride MAX_D)

afloat score(uint t, uint s) { return scores[t * SROW4 + s / 4u][s % 4u]; }
void set_score(uint t, uint s, afloat value) { scores[t * SROW4 + s / 4u][s % 4u] = value; }

uint len;
afloat operand(uint which, uint row, uint x);
void store_result(uint b, uint row, uint col, afloat value);

// Global memory is the wait in these loops: each tile's loads are issued into registers before the
// products on the tile before it, so a tile costs one wait overlapped with arithmetic instead of a
// wait between two barriers. The slots of one tile an invocation carries (unrolled: the arrays stay
// in registers): rows_product's tiles are BLOCK4 x TILE (slot e = row TILE + x), scores_product's
// TILE x width (slot e = x width + col).
const uint ROW_PREFETCH = (BLOCK4 * TILE + WG_SIZE - 1) / WG_SIZE;
const uint WIDEST = DK > DV ? DK : DV;
const uint B_PREFETCH = (TILE * WIDEST + WG_SIZE - 1) / WG_SIZE;

// Slice x0 .. x0 + TILE - 1 of the block's rows of a and b; zero past len and width. The loads are
// clamped into the block (unconditional, never out of bounds).
void fetch_row_slices(uint a, uint b, uint x0, uint width, out afloat next_a[ROW_PREFETCH],
                      out afloat next_b[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, row = e / TILE, x = x0 + e % TILE;
    const bool live = row < len && x < width;
    const uint rr = min(row, len - 1u), xx = min(x, width - 1u);
    const afloat va = operand(a, rr, xx), vb = operand(b, rr, xx);
    next_a[i] = live ? va : 0.0;
    next_b[i] = live ? vb : 0.0;
  }
}
void store_row_slices(afloat next_a[ROW_PREFETCH], afloat next_b[ROW_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, row = e / TILE, x = e % TILE;
    if (row >= BLOCK4) continue;
    row_tile[row * TROW4 + x / 4u][x % 4u] = next_a[i];
    other_tile[x * OROW + row] = next_b[i];
  }
}

// acc[r][c] = sum over x < width of A[r0 + r][x] B[s0 + step c][x] for the block's rows of A and
// B, a TILE-wide slice at a time. Every invocation calls it (it holds barriers); owners get results.
// With `masked` (a causal mask over rows and columns that start together) the columns c whose
// every entry lies past the block's rows (step c > r0 + 3) are left at zero: the mask discards them.
void rows_product(uint a, uint b, uint width, bool masked, bool owner, uint r0, uint s0, uint step,
                  inout afloat acc[4][4]) {
  const uint live_c = masked ? min(4u, (r0 + 3u) / step + 1u) : 4u;
  afloat next_a[ROW_PREFETCH], next_b[ROW_PREFETCH];
  fetch_row_slices(a, b, 0, width, next_a, next_b);
  for (uint x0 = 0; x0 < width; x0 += TILE) {
    barrier();  // the previous tiles (or scores) read -> overwritten
    store_row_slices(next_a, next_b);
    barrier();  // tiles stored -> read by every block owner
    if (x0 + TILE < width) fetch_row_slices(a, b, x0 + TILE, width, next_a, next_b);  // in flight below
    if (!owner) continue;
    [[unroll]] for (uint x4 = 0; x4 < TILE / 4u; ++x4) {
      vec4 av[4];
      [[unroll]] for (uint r = 0; r < 4; ++r) av[r] = row_tile[(r0 + r) * TROW4 + x4];
      [[unroll]] for (uint u = 0; u < 4; ++u) {
        afloat bv[4];
        [[unroll]] for (uint c = 0; c < 4; ++c)
          if (c < live_c) bv[c] = other_tile[(4u * x4 + u) * OROW + s0 + step * c];
        [[unroll]] for (uint r = 0; r < 4; ++r)
          [[unroll]] for (uint c = 0; c < 4; ++c)
            if (c < live_c) acc[r][c] += av[r][u] * bv[c];
      }
    }
  }
}

// The block's len x len scores as 4 x 4 blocks of (t, s), WG_SIZE blocks a round.
uint score_rounds() {
  const uint blocks_t = (len + 3) / 4;
  return (blocks_t * blocks_t + WG_SIZE - 1) / WG_SIZE;
}

// This invocation's block of round `round`, rows t0 + r and columns s0 + step c (r, c < 4), and
// acc = its part of A B^T (rows_product); false past the last block. Every invocation calls it (it
// holds barriers). The blocks cover t, s < 4 ceil(len / 4): the includer writes every such entry
// (zero outside the block and the mask), which scores_product reads in whole vectors.
bool score_block(uint round, uint a, uint b, uint width, bool masked, out uint t0, out uint s0, out uint step,
                 out afloat acc[4][4]) {
  const uint blocks_t = (len + 3) / 4, blk = round * WG_SIZE + gl_LocalInvocationID.x;
  const bool owner = blk < blocks_t * blocks_t;
  t0 = owner ? blk / blocks_t * 4 : 0;
  s0 = owner ? blk % blocks_t : 0;
  step = blocks_t;
  for (uint r = 0; r < 4; ++r)
    for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
  rows_product(a, b, width, masked, owner, t0, s0, step, acc);
  return owner;
}

// Rows x0 .. x0 + TILE - 1 of operand b (width columns), zero past len.
void fetch_b_rows(uint b, uint x0, uint width, out afloat next[B_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, x = x0 + e / width;
    const afloat v = operand(b, min(x, len - 1u), e % width);
    next[i] = x < len ? v : 0.0;
  }
}
void store_b_rows(uint width, afloat next[B_PREFETCH]) {
  [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
    const uint e = gl_LocalInvocationID.x + i * WG_SIZE, x = e / width;
    if (x < TILE) other_tile[x * MAX_D + e % width] = next[i];
  }
}

// The products with B's rows as result columns (scores_product, product_walk) hand out 4 x 4
// result blocks in rounds of at most WG_SIZE. Rounds one walk over B's tiles serves: all of them
// with FUSE_ROUNDS (each tile of B loaded and each of its words read from shared memory once for
// every round; the register blocks of every round live at once), else one (a round's blocks live
// at a time; B walked once per round).
layout(constant_id = 7) const bool FUSE_ROUNDS = false;  // (6 is the flash backward's KIND)
uint blocks_across(uint width) { return (width + 3u) / 4u; }
// Fused, an invocation owns the same 4 strided columns c0 + blocks_c c (c0 = its index mod
// blocks_c) in every round, so that the rounds share each read of B: round i holds row blocks
// i * rows_per_round .. + rows_per_round - 1, rows_per_round = WG_SIZE / blocks_c (invocations
// past rows_per_round * blocks_c own none). Apart, the rounds take the blocks in order, WG_SIZE at
// a time (no invocation idles where blocks_c does not divide WG_SIZE; the two agree where it does).
uint rows_per_round(uint width) { return WG_SIZE / blocks_across(width); }
// The most rounds of any width up to WIDEST (rows of up to BLOCK4).
const uint ROUNDS = FUSE_ROUNDS ? (BLOCK4 / 4u + WG_SIZE / ((WIDEST + 3u) / 4u) - 1u) / (WG_SIZE / ((WIDEST + 3u) / 4u))
                                : (BLOCK4 / 4u * ((WIDEST + 3u) / 4u) + WG_SIZE - 1u) / WG_SIZE;
const uint WALK_ROUNDS = FUSE_ROUNDS ? ROUNDS : 1u;

// scores_product's rounds over len rows and width columns.
uint product_rounds(uint width) {
  const uint row_blocks = (len + 3u) / 4u;
  return FUSE_ROUNDS ? (row_blocks + rows_per_round(width) - 1u) / rows_per_round(width)
                     : (row_blocks * blocks_across(width) + WG_SIZE - 1u) / WG_SIZE;
}

// This invocation's block of round `round`: rows r0 + r, columns c0 + blocks_c c (neighbouring
// invocations read neighbouring words of the tile); false past the last block.
bool product_block(uint round, uint width, out uint r0, out uint c0) {
  const uint blocks_c = blocks_across(width), tid = gl_LocalInvocationID.x, row_blocks = (len + 3u) / 4u;
  uint row_block;
  bool owner;
  if (FUSE_ROUNDS) {
    row_block = round * rows_per_round(width) + tid / blocks_c;
    owner = tid < rows_per_round(width) * blocks_c && row_block < row_blocks;
    c0 = tid % blocks_c;
  } else {
    const uint blk = round * WG_SIZE + tid;
    row_block = blk / blocks_c;
    owner = row_block < row_blocks;
    c0 = blk % blocks_c;
  }
  r0 = owner ? row_block * 4u : 0u;
  return owner;
}

// acc[w][r][c] += sum over x < len of M[r][x] B[x][c] (TRANSPOSED: M[x][r]) for this invocation's
// blocks of rounds first + w, w < WALK_ROUNDS (product_block), with M = scores and B the rows of
// operand b (width columns), TILE rows of B at a time. Every invocation calls it (it holds
// barriers). With `masked` (a causal mask over rows and columns that start together) the steps that
// meet only its zeros are skipped. Each result sums its terms in the order of x whether or not the
// rounds share the walk.
void product_walk(uint first, bool transposed, bool masked, uint b, uint width, inout afloat acc[WALK_ROUNDS][4][4]) {
  const uint blocks_c = blocks_across(width), len4 = (len + 3u) / 4u * 4u;  // the scores' written rows and columns
  uint r0[WALK_ROUNDS], c0 = 0u;  // c0: the same in every round of a walk (product_block)
  bool owner[WALK_ROUNDS];
  [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) owner[w] = product_block(first + w, width, r0[w], c0);
  uint column[4];  // past width: a clamped (loaded) column, never stored
  for (uint c = 0; c < 4; ++c) column[c] = min(c0 + blocks_c * c, width - 1u);
  afloat next[B_PREFETCH];
  fetch_b_rows(b, 0, width, next);
  for (uint x0 = 0; x0 < len; x0 += TILE) {
    barrier();  // scores (first time) and the previous tile read -> overwritten
    store_b_rows(width, next);
    barrier();  // tile stored -> read by every block owner
    if (x0 + TILE < len) fetch_b_rows(b, x0 + TILE, width, next);  // in flight during the products
    // Each round's steps x of this tile that can be nonzero: x < len4, and masked M[r][x] = 0 for
    // x > r (x <= r0 + 3 matters) or, transposed, M[x][r] = 0 for x < r (x >= r0 matters). r0 and x0
    // are multiples of 4, so whole vectors. The walk takes the union of the owned rounds' steps.
    uint x_begin[WALK_ROUNDS], x_end[WALK_ROUNDS], lo = TILE, hi = 0u;
    [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) {
      x_begin[w] = 0u;
      x_end[w] = min(TILE, len4 - x0);
      if (masked && !transposed) x_end[w] = min(x_end[w], r0[w] + 4u > x0 ? r0[w] + 4u - x0 : 0u);
      if (masked && transposed) x_begin[w] = min(x_end[w], r0[w] > x0 ? r0[w] - x0 : 0u);
      if (owner[w] && x_begin[w] < x_end[w]) {
        lo = min(lo, x_begin[w]);
        hi = max(hi, x_end[w]);
      }
    }
    for (uint x4 = lo / 4u; x4 < hi / 4u; ++x4) {
      bool live[WALK_ROUNDS];
      vec4 mv[WALK_ROUNDS][4];  // [r][u] or, transposed, [u][r]
      [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) {
        live[w] = owner[w] && 4u * x4 >= x_begin[w] && 4u * x4 < x_end[w];
        if (live[w])
          [[unroll]] for (uint i = 0; i < 4; ++i)
            mv[w][i] = transposed ? scores[(x0 + 4u * x4 + i) * SROW4 + r0[w] / 4u]
                                  : scores[(r0[w] + i) * SROW4 + x0 / 4u + x4];
      }
      [[unroll]] for (uint u = 0; u < 4; ++u) {
        afloat bv[4];
        [[unroll]] for (uint c = 0; c < 4; ++c) bv[c] = other_tile[(4u * x4 + u) * MAX_D + column[c]];
        [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w)
          if (live[w])
            [[unroll]] for (uint r = 0; r < 4; ++r)
              [[unroll]] for (uint c = 0; c < 4; ++c)
                acc[w][r][c] += (transposed ? mv[w][u][r] : mv[w][r][u]) * bv[c];
      }
    }
  }
}

// acc[i] += round i's blocks of M B (TRANSPOSED: M^T B), every round i < ROUNDS, in walks of
// WALK_ROUNDS rounds (product_walk): the flash kernels' accumulators, which live over their walk
// of a block's tiles.
void products(bool transposed, bool masked, uint b, uint width, inout afloat acc[ROUNDS][4][4]) {
  [[unroll]] for (uint first = 0; first < ROUNDS; first += WALK_ROUNDS) {
    // A narrower product than the widest (Dk != Dv) may need fewer rounds: no walk that owns
    // nothing (the condition is the same for the whole workgroup, so the walk's barriers stay legal).
    if (first >= product_rounds(width)) break;
    afloat walk[WALK_ROUNDS][4][4];
    [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) walk[w] = acc[first + w];
    product_walk(first, transposed, masked, b, width, walk);
    [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) acc[first + w] = walk[w];
  }
}

// out = M B (TRANSPOSED: M^T B) as product_walk's, every round, each result to the includer's
// store_result(b, row, col, value).
void scores_product(bool transposed, bool masked, uint b, uint width) {
  const uint blocks_c = blocks_across(width);
  for (uint first = 0; first < product_rounds(width); first += WALK_ROUNDS) {
    afloat acc[WALK_ROUNDS][4][4];
    [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w)
      for (uint r = 0; r < 4; ++r)
        for (uint c = 0; c < 4; ++c) acc[w][r][c] = 0.0;
    product_walk(first, transposed, masked, b, width, acc);
    [[unroll]] for (uint w = 0; w < WALK_ROUNDS; ++w) {
      uint r0, c0;
      if (!product_block(first + w, width, r0, c0)) continue;
      for (uint r = 0; r < 4; ++r)
        for (uint c = 0; c < 4; ++c) {
          if (r0 + r >= len || c0 + blocks_c * c >= width) continue;
          store_result(b, r0 + r, c0 + blocks_c * c, acc[w][r][c]);
        }
    }
  }
}
