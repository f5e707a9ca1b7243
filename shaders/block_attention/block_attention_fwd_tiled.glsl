// Block attention forward for GPUs, one workgroup per (block, batch*head) and blocks up to 64: the
// block's attention as two products through shared-memory tiles, each invocation accumulating 4 x 4
// blocks in registers (the generic kernel keeps a row's Dv accumulators in a private array, which
// GPUs spill to memory, and reads its query row once per key):
//   1. logits S = scale * Q K^T over the block ([len, len], masked above the diagonal when CAUSAL),
//      TILE slices of the head dimension at a time, kept in shared memory;
//   2. each row's softmax in place (max, then sum of exponentials): P and lse = max + log(sum);
//   3. O = P V, TILE rows of V at a time.
// q, k: [BH, N, Dk], v, o: [BH, N, Dv] sfloat with Dk, Dv <= 128; lse: [BH, N] f32.
#include "rill_common.glsl"

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BLOCK = 64;  // <= 64 (the scores live in shared memory)
layout(constant_id = 2) const bool CAUSAL = true;
layout(constant_id = 3) const uint TILE = 16;
layout(local_size_x_id = 0) in;
#define MAX_D 128u

#include "block_attention_fwd_io.glsl"

shared afloat scores[BLOCK * BLOCK];    // [t][s]: logits, then probabilities
shared afloat q_tile[BLOCK * TILE];     // [t][i]
shared afloat other_tile[TILE * MAX_D]; // [s][i] keys (BLOCK <= MAX_D rows), then [s][j] values

void main() {
  const uint bh = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  const uint b0 = gl_WorkGroupID.x * BLOCK;
  const uint len = min(BLOCK, p.n - b0);
  const uint qk_base = (bh * p.n + b0) * p.dk, v_base = (bh * p.n + b0) * p.dv;
  const uint blocks_t = (len + 3) / 4;

  // 1. Logits, 4 x 4 blocks of (t, s).
  for (uint round = 0; round * WG_SIZE < blocks_t * blocks_t; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_t;
    const uint r0 = owner ? blk / blocks_t * 4 : 0, s0 = owner ? blk % blocks_t * 4 : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    for (uint k0 = 0; k0 < p.dk; k0 += TILE) {
      const uint width = min(TILE, p.dk - k0);
      barrier();  // the previous tiles -> these loads
      for (uint e = tid; e < len * width; e += WG_SIZE) {
        const uint row = e / width, kk = e % width;
        q_tile[row * TILE + kk] = afloat(q[qk_base + row * p.dk + k0 + kk]);
        other_tile[row * TILE + kk] = afloat(k[qk_base + row * p.dk + k0 + kk]);
      }
      barrier();  // tiles loaded -> read by every block owner
      if (!owner) continue;
      for (uint kk = 0; kk < width; ++kk) {
        afloat qv[4], kv[4];
        for (uint r = 0; r < 4; ++r) qv[r] = q_tile[min(r0 + r, len - 1) * TILE + kk];
        for (uint c = 0; c < 4; ++c) kv[c] = other_tile[min(s0 + c, len - 1) * TILE + kk];
        for (uint r = 0; r < 4; ++r)
          for (uint c = 0; c < 4; ++c) acc[r][c] += qv[r] * kv[c];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c)
        if (r0 + r < len && s0 + c < len) scores[(r0 + r) * BLOCK + s0 + c] = acc[r][c] * p.scale;
  }
  barrier();  // logits written -> read by the row owners

  // 2. Each row's softmax in place; masked entries become 0.
  for (uint t = tid; t < len; t += WG_SIZE) {
    const uint last = CAUSAL ? t : len - 1;
    afloat m = scores[t * BLOCK];
    for (uint s = 1; s <= last; ++s) m = max(m, scores[t * BLOCK + s]);
    afloat l = 0.0;
    for (uint s = 0; s <= last; ++s) {
      const afloat w = exp(scores[t * BLOCK + s] - m);
      scores[t * BLOCK + s] = w;
      l += w;
    }
    const afloat inv = 1.0 / l;
    for (uint s = 0; s < len; ++s) scores[t * BLOCK + s] = s <= last ? scores[t * BLOCK + s] * inv : 0.0;
    lse[bh * p.n + b0 + t] = m + log(l);
  }

  // 3. O = P V, 4 x 4 blocks of (t, j).
  const uint blocks_j = (p.dv + 3) / 4;
  for (uint round = 0; round * WG_SIZE < blocks_t * blocks_j; ++round) {
    const uint blk = round * WG_SIZE + tid;
    const bool owner = blk < blocks_t * blocks_j;
    const uint r0 = owner ? blk / blocks_j * 4 : 0, j0 = owner ? blk % blocks_j * 4 : 0;
    afloat acc[4][4];
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
    for (uint s0 = 0; s0 < len; s0 += TILE) {
      const uint rows = min(TILE, len - s0);
      barrier();  // probabilities (first time) and the previous tile -> these loads
      for (uint e = tid; e < rows * p.dv; e += WG_SIZE) {
        const uint s = e / p.dv, j = e % p.dv;
        other_tile[s * MAX_D + j] = afloat(v[v_base + (s0 + s) * p.dv + j]);
      }
      barrier();  // tile loaded -> read by every block owner
      if (!owner) continue;
      for (uint s = 0; s < rows; ++s) {
        afloat pv[4], vv[4];
        for (uint r = 0; r < 4; ++r) pv[r] = scores[min(r0 + r, len - 1) * BLOCK + s0 + s];
        for (uint c = 0; c < 4; ++c) vv[c] = other_tile[s * MAX_D + min(j0 + c, p.dv - 1)];
        for (uint r = 0; r < 4; ++r)
          for (uint c = 0; c < 4; ++c) acc[r][c] += pv[r] * vv[c];
      }
    }
    if (!owner) continue;
    for (uint r = 0; r < 4; ++r)
      for (uint c = 0; c < 4; ++c)
        if (r0 + r < len && j0 + c < p.dv) o[v_base + (r0 + r) * p.dv + j0 + c] = sfloat(acc[r][c]);
  }
}
