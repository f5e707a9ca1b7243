// matmul_coop.glsl with its fragments emulated by plain arithmetic: the cooperative-matrix kernel's
// tiling, tested on devices without cooperative matrices.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_coop.glsl"
