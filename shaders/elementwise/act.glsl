// Activations shared by SiLU and GLU: ACT 0 identity, 1 sigmoid, 2 silu; and their derivatives.
afloat sigmoid(afloat x) { return 1.0 / (1.0 + exp(-x)); }
afloat act(uint kind, afloat x) {
  if (kind == 1) return sigmoid(x);
  if (kind == 2) return x * sigmoid(x);
  return x;
}
afloat act_grad(uint kind, afloat x) {
  const afloat s = sigmoid(x);
  if (kind == 1) return s * (1.0 - s);
  if (kind == 2) return s * (1.0 + x * (1.0 - s));  // d/dx x s(x) = s + x s (1 - s)
  return 1.0;
}
