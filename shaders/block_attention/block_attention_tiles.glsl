// The shared-memory tile products of the GPUs' block-attention kernels
// (block_attention_fwd_tiled.glsl, block_attention_bwd_tiled.glsl): 4 x 4 blocks of results in each
// invocation's registers, operands streamed through TILE-wide tiles.
//
// Shared-memory banks: an invocation's 4 result columns are strided by the number of column groups
// (column c of group g is g + groups * c), so a warp's neighbouring invocations read neighbouring
// words; the operand whose rows become result columns is stored transposed, its rows padded by one
// word, as are the scores' rows (a row per invocation in the softmax then hits 32 different banks).
// With 4 contiguous columns and unpadded rows the same reads were 16-way conflicts on 32 banks.
//
// Declared here for both kernels: their specialization constants, the block's scores and the two
// tiles. The includer sets `len` (the block's rows) and defines operand(which, row, x) (element x
// of the block's row `row` of operand `which`) and store_result(which, row, col, value)
// (scores_product's result, by its operand b).
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BLOCK = 64;  // <= 64 (the scores live in shared memory)
layout(constant_id = 2) const bool CAUSAL = true;
layout(constant_id = 3) const uint TILE = 16;
layout(local_size_x_id = 0) in;
#define MAX_D 128u

const uint SROW = BLOCK + 1;              // the scores' row stride
shared afloat scores[BLOCK * SROW];       // [t][s]: logits or P, then probabilities or dS
const uint TROW = TILE + 1;               // row_tile's padded row
shared afloat row_tile[BLOCK * TROW];     // [row][x]: a TILE-wide slice of the block's rows
shared afloat other_tile[TILE * MAX_D];   // [x][row] slices (stride SROW <= MAX_D) or [x][col] tiles

uint len;
afloat operand(uint which, uint row, uint x);
void store_result(uint b, uint row, uint col, afloat value);

// Global memory is the wait in these loops: each tile's loads are issued into registers before the
// products on the tile before it, so a tile costs one wait overlapped with arithmetic instead of a
// wait between two barriers. The elements of one tile an invocation carries: rows_product's tiles
// are at most BLOCK x TILE, scores_product's TILE x MAX_D (unrolled: the arrays stay in registers).
const uint ROW_PREFETCH = (BLOCK * TILE + WG_SIZE - 1) / WG_SIZE;
const uint B_PREFETCH = (TILE * MAX_D + WG_SIZE - 1) / WG_SIZE;

// acc[r][c] = sum over x < width of A[r0 + r][x] B[s0 + step c][x] for the block's rows of A and
// B, a TILE-wide slice at a time. Every invocation calls it (it holds barriers); owners get results.
void rows_product(uint a, uint b, uint width, bool owner, uint r0, uint s0, uint step, inout afloat acc[4][4]) {
  const uint tid = gl_LocalInvocationID.x;
  afloat next_a[ROW_PREFETCH], next_b[ROW_PREFETCH];  // slice x0's elements e = tid + i WG_SIZE
  uint w = min(TILE, width);
  [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
    const uint e = tid + i * WG_SIZE;
    if (e < len * w) {
      next_a[i] = operand(a, e / w, e % w);
      next_b[i] = operand(b, e / w, e % w);
    }
  }
  for (uint x0 = 0; x0 < width; x0 += TILE) {
    barrier();  // the previous tiles (or scores) read -> overwritten
    [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
      const uint e = tid + i * WG_SIZE;
      if (e < len * w) {
        row_tile[(e / w) * TROW + e % w] = next_a[i];
        other_tile[(e % w) * SROW + e / w] = next_b[i];
      }
    }
    barrier();  // tiles stored -> read by every block owner
    const uint x1 = x0 + TILE, w_now = w;
    if (x1 < width) {  // the next slice's loads, in flight during the products below
      w = min(TILE, width - x1);
      [[unroll]] for (uint i = 0; i < ROW_PREFETCH; ++i) {
        const uint e = tid + i * WG_SIZE;
        if (e < len * w) {
          next_a[i] = operand(a, e / w, x1 + e % w);
          next_b[i] = operand(b, e / w, x1 + e % w);
        }
      }
    }
    if (!owner) continue;
    for (uint x = 0; x < w_now; ++x) {
      afloat av[4], bv[4];
      for (uint r = 0; r < 4; ++r) av[r] = row_tile[min(r0 + r, len - 1) * TROW + x];
      for (uint c = 0; c < 4; ++c) bv[c] = other_tile[x * SROW + min(s0 + step * c, len - 1)];
      for (uint r = 0; r < 4; ++r)
        for (uint c = 0; c < 4; ++c) acc[r][c] += av[r] * bv[c];
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
// holds barriers).
bool score_block(uint round, uint a, uint b, uint width, out uint t0, out uint s0, out uint step,
                 out afloat acc[4][4]) {
  const uint blocks_t = (len + 3) / 4, blk = round * WG_SIZE + gl_LocalInvocationID.x;
  const bool owner = blk < blocks_t * blocks_t;
  t0 = owner ? blk / blocks_t * 4 : 0;
  s0 = owner ? blk % blocks_t : 0;
  step = blocks_t;
  for (uint r = 0; r < 4; ++r)
    for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
  rows_product(a, b, width, owner, t0, s0, step, acc);
  return owner;
}

// out[r][c] = sum over x < len of M[r][x] B[x][c] (TRANSPOSED: M[x][r]) with M = scores and B the
// block's rows of operand b (width columns): 4 x 4 blocks of (r, c), TILE rows of B at a time.
// Each result goes to the includer's store_result(b, row, col, value).
void scores_product(bool transposed, uint b, uint width) {
  const uint tid = gl_LocalInvocationID.x, blocks_r = (len + 3) / 4, blocks_c = (width + 3) / 4;
  for (uint round = 0; round * WG_SIZE < blocks_r * blocks_c; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_r * blocks_c;
    // Columns c0 + blocks_c c: neighbouring invocations read neighbouring words of the tile.
    const uint r0 = owner ? blk / blocks_c * 4 : 0, c0 = owner ? blk % blocks_c : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    afloat next[B_PREFETCH];  // rows x0 .. of B, elements e = tid + i WG_SIZE (prefetched as above)
    uint rows = min(TILE, len);
    [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
      const uint e = tid + i * WG_SIZE;
      if (e < rows * width) next[i] = operand(b, e / width, e % width);
    }
    for (uint x0 = 0; x0 < len; x0 += TILE) {
      barrier();  // scores (first time) and the previous tile read -> overwritten
      [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
        const uint e = tid + i * WG_SIZE;
        if (e < rows * width) other_tile[(e / width) * MAX_D + e % width] = next[i];
      }
      barrier();  // tile stored -> read by every block owner
      const uint x1 = x0 + TILE, rows_now = rows;
      if (x1 < len) {  // the next rows' loads, in flight during the products below
        rows = min(TILE, len - x1);
        [[unroll]] for (uint i = 0; i < B_PREFETCH; ++i) {
          const uint e = tid + i * WG_SIZE;
          if (e < rows * width) next[i] = operand(b, x1 + e / width, e % width);
        }
      }
      if (!owner) continue;
      for (uint x = 0; x < rows_now; ++x) {
        afloat mv[4], bv[4];
        for (uint r = 0; r < 4; ++r) {
          const uint rr = min(r0 + r, len - 1);
          mv[r] = transposed ? scores[(x0 + x) * SROW + rr] : scores[rr * SROW + x0 + x];
        }
        for (uint c = 0; c < 4; ++c) bv[c] = other_tile[x * MAX_D + min(c0 + blocks_c * c, width - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint c = 0; c < 4; ++c) acc[r][c] += mv[r] * bv[c];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) {
        if (r0 + r >= len || c0 + blocks_c * c >= width) continue;
        store_result(b, r0 + r, c0 + blocks_c * c, acc[r][c]);
      }
  }
}
