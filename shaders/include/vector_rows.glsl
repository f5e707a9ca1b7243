// The unit in which a CPU-driver kernel loads and stores rows: row_store in memory, row_value in
// arithmetic, ROW_VEC elements. On lavapipe every load whose address differs per lane is a loop
// over the lanes, and a vector load costs one loop for four elements; so where every row length
// is a multiple of 4, the kernel is compiled a second time with RILL_VECTOR_ROWS (its `_vec4`
// variant) and reads and writes vectors of 4 adjacent elements.
#ifndef RILL_VECTOR_ROWS_GLSL
#define RILL_VECTOR_ROWS_GLSL
#include "rill_common.glsl"

#ifdef RILL_VECTOR_ROWS
#define row_store svec4
#define out_row_store ovec4  // the output's rows (rill_common.glsl's ofloat)
#define to_row_store to_svec4  // stores (rill_common.glsl says why not a plain conversion)
#define to_out_row_store to_ovec4
#define row_value vec4
const uint ROW_VEC = 4u;
afloat row_component(row_value v, uint e) { return v[e]; }
#else
#define row_store sfloat
#define out_row_store ofloat
#define to_row_store to_sfloat
#define to_out_row_store to_ofloat
#define row_value afloat
const uint ROW_VEC = 1u;
afloat row_component(row_value v, uint e) { return v; }
#endif

// Load u of buf as a row_value. With RILL_TEXEL_ROWS (which needs RILL_VECTOR_ROWS) the kernel
// declares the rows it reads as `uniform samplerBuffer`s of 4-element texels (vk/texel_views.hpp):
// lavapipe gathers every lane's texel at once, where a storage-buffer load loops over the lanes.
#ifdef RILL_TEXEL_ROWS
#ifndef RILL_VECTOR_ROWS
#error "RILL_TEXEL_ROWS reads 4-element rows: define RILL_VECTOR_ROWS too"
#endif
#define ROW_READ(buf, u) texelFetch(buf, int(u))
#else
#define ROW_READ(buf, u) row_value(buf[u])
#endif

// Load u of a row held in registers as an array of elements (u a constant).
#ifdef RILL_VECTOR_ROWS
#define ROW_AT(elements, u) \
  vec4(elements[4u * (u)], elements[4u * (u) + 1u], elements[4u * (u) + 2u], elements[4u * (u) + 3u])
#else
#define ROW_AT(elements, u) elements[u]
#endif

// elements[0 .. D) = row `row` of buf (rows of D elements from load `base` on), and back.
#define LOAD_ROW(elements, buf, base, row, D)                                            \
  [[unroll]] for (uint u_ = 0; u_ < (D) / ROW_VEC; ++u_) {                               \
    const row_value x_ = ROW_READ(buf, (base) + (row) * ((D) / ROW_VEC) + u_);           \
    [[unroll]] for (uint e_ = 0; e_ < ROW_VEC; ++e_) elements[u_ * ROW_VEC + e_] = row_component(x_, e_); \
  }
#define STORE_ROW(buf, base, row, D, elements)                                           \
  [[unroll]] for (uint u_ = 0; u_ < (D) / ROW_VEC; ++u_)                                 \
    buf[(base) + (row) * ((D) / ROW_VEC) + u_] = to_row_store(ROW_AT(elements, u_));

// Element i of a row spread over a subgroup of `sg` lanes in loads (lane l holds loads l, l + sg,
// ... in slots[0], slots[1], ...), broadcast from the lane that holds it (needs
// GL_KHR_shader_subgroup_shuffle; i a constant, so that slots stays in registers).
#define SPREAD_ELEMENT(slots, i, sg) \
  subgroupShuffle(row_component(slots[((i) / ROW_VEC) / (sg)], (i) % ROW_VEC), ((i) / ROW_VEC) % (sg))

#endif  // RILL_VECTOR_ROWS_GLSL
