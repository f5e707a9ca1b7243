// Roofline plot as a standalone SVG: log-log axes, the bandwidth roof rising to the compute roof,
// and one labelled point per kernel.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "rill/profile.hpp"

namespace rill {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

}  // namespace

std::string roofline_svg(const std::vector<KernelSummary>& kernels, const DevicePeaks& peaks) {
  const double W = 760, H = 480, left = 80, right = 30, top = 50, bottom = 60;
  // Non-finite figures (a timer that read 0) would make the axes endless: left out, as unknown.
  auto usable = [](double v) { return std::isfinite(v) && v > 0; };
  const double peak = usable(peaks.fma_f32_gflops) ? std::max(peaks.fma_f32_gflops, 1e-3) : 1e-3;
  const double bw = usable(peaks.copy_gbps) ? std::max(peaks.copy_gbps, 1e-3) : 1e-3;
  const double ridge = peak / bw;
  // Axis ranges in decades, wide enough for the roofs and every point.
  double x_lo = std::min(ridge / 100.0, 0.01), x_hi = std::max(ridge * 100.0, 100.0);
  double y_hi = peak * 3.0, y_lo = peak / 1e4;
  for (const KernelSummary& k : kernels) {
    if (!usable(k.intensity) || !usable(k.gflops)) continue;
    x_lo = std::min(x_lo, k.intensity / 3.0);
    x_hi = std::max(x_hi, k.intensity * 3.0);
    y_lo = std::min(y_lo, k.gflops / 3.0);
  }
  x_lo = std::pow(10.0, std::floor(std::log10(x_lo)));
  x_hi = std::pow(10.0, std::ceil(std::log10(x_hi)));
  y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10.0, std::ceil(std::log10(y_hi)));
  auto px = [&](double x) { return left + (std::log10(x) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo)) * (W - left - right); };
  auto py = [&](double y) { return H - bottom - (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)) * (H - top - bottom); };

  std::string s = fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  s += fmt("<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
  s += "<text x=\"" + fmt("%.0f", W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">Roofline: " + escape(peaks.device) + "</text>\n";
  // Grid and decade labels.
  for (double x = x_lo; x <= x_hi * 1.001; x *= 10) {
    s += fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px(x), top, px(x), H - bottom);
    s += fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px(x), H - bottom + 16, x);
  }
  for (double y = y_lo; y <= y_hi * 1.001; y *= 10) {
    s += fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, py(y), W - right, py(y));
    s += fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", left - 6, py(y) + 4, y);
  }
  s += fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", left, top, W - left - right, H - top - bottom);
  s += fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n", (left + W - right) / 2, H - 18);
  s += fmt("<text transform=\"translate(20,%.1f) rotate(-90)\" text-anchor=\"middle\">achieved GFLOP/s</text>\n", (top + H - bottom) / 2);
  // Roofs: bandwidth up to the ridge, compute after it.
  const double x0 = std::max(x_lo, y_lo / bw);
  s += fmt("<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f ", px(x0), py(x0 * bw), px(ridge), py(peak));
  s += fmt("%.1f,%.1f\"/>\n", px(x_hi), py(peak));
  s += fmt("<text x=\"%.1f\" y=\"%.1f\" fill=\"#c0392b\">%.1f GFLOP/s f32 FMA</text>\n", px(ridge) + 8, py(peak) - 6, peak);
  s += fmt("<text x=\"%.1f\" y=\"%.1f\" fill=\"#c0392b\" text-anchor=\"end\">%.1f GB/s</text>\n", px(ridge) - 8, py(peak) + 16, bw);
  // Kernels.
  int i = 0, unplotted = 0;
  for (const KernelSummary& k : kernels) {
    if (k.intensity <= 0 || k.gflops <= 0) {
      ++unplotted;
      continue;
    }
    const double x = px(k.intensity), y = py(k.gflops);
    // Labels of points near the right edge go to their left so they stay inside the picture.
    const bool flip = x > left + 0.65 * (W - left - right);
    s += fmt("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#2471a3\"/>\n", x, y);
    s += "<text x=\"" + fmt("%.1f", flip ? x - 8 : x + 8) + "\" y=\"" + fmt("%.1f", y + 4 + 12.0 * (i % 2)) + "\"" +
         (flip ? " text-anchor=\"end\"" : "") + ">" +
         escape(k.kernel + (k.variant.empty() || k.variant == "default" ? "" : " (" + k.variant + ")")) +
         (k.roofline_fraction > 0 ? fmt(" %.0f%%", 100.0 * k.roofline_fraction) : std::string()) + "</text>\n";
    ++i;
  }
  if (unplotted > 0)
    s += fmt("<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">%.0f kernel(s) without declared FLOPs not shown</text>\n",
             left + 8, top + 16, unplotted);
  s += "</svg>\n";
  return s;
}

}  // namespace rill
