// Dispatch-latency microbenchmark: one invocation that writes one word. out: [1] u32.
#version 450

layout(local_size_x = 1) in;
layout(std430, binding = 0) writeonly buffer Out { uint out_data[]; };

void main() { out_data[0] = 1u; }
