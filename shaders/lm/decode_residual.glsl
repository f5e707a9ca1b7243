// The residual row of the fused decoding kernels that follow an FFN (decode_mix.glsl,
// decode_logits.glsl): mv_in = resid + the FFN's partial rows [p.parts_in, p.width] summed in
// order, rounded to storage as the per-op path's residual sum (none: resid itself). The includer
// declares the buffers resid and parts_in first. Each invocation writes i = lid + k WG_SIZE.
void load_residual() {
  const uint lid = gl_LocalInvocationID.x, D = p.width;
  for (uint i = lid; i < D; i += WG_SIZE) {
    float x = float(resid[i]);
    if (p.parts_in > 0u) {
      // PREFETCH rows' loads issued before their adds: one memory wait per PREFETCH rows, not per row.
      const uint PREFETCH = 8u;
      float f = 0.0;
      for (uint s0 = 0u; s0 < p.parts_in; s0 += PREFETCH) {
        float part[PREFETCH];
        [[unroll]] for (uint q = 0u; q < PREFETCH; ++q) part[q] = parts_in[min(s0 + q, p.parts_in - 1u) * D + i];
        [[unroll]] for (uint q = 0u; q < PREFETCH; ++q)
          if (s0 + q < p.parts_in) f += part[q];
      }
      x = rill_storage_round(x + f);
    }
    mv_in[i] = x;
  }
}
