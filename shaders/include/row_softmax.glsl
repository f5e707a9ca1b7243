// A row's softmax statistics, across the workgroup (one workgroup per row): the largest of
// logits[base + c] for c < count, and the sum of exp(logits - that max), in f32 whatever the storage.
// Needs the includer's buffer `logits` (sfloat) and rill_reduce.glsl; every invocation must call it
// (its reductions hold barriers).
#ifndef RILL_ROW_SOFTMAX_GLSL
#define RILL_ROW_SOFTMAX_GLSL

void rill_row_softmax_stats(uint base, uint count, out float most, out float sum) {
  most = uintBitsToFloat(0xff800000u);  // -inf
  for (uint c = gl_LocalInvocationID.x; c < count; c += WG_SIZE) most = max(most, float(logits[base + c]));
  most = rill_workgroup_max(most);
  sum = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < count; c += WG_SIZE) sum += exp(float(logits[base + c]) - most);
  sum = rill_workgroup_sum(sum);
}

#endif  // RILL_ROW_SOFTMAX_GLSL
