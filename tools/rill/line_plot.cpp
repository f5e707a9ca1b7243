#include "line_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <sstream>

#include "rill/files.hpp"

namespace rill_cli {
namespace {

constexpr double kWidth = 860, kHeight = 440, kLeft = 70, kRight = 290, kTop = 40, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string line_plot_svg(const PlotSpec& spec) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto take_y = [&](double y) {
    if (std::isfinite(y) && y > 0) y0 = std::min(y0, y), y1 = std::max(y1, y);
  };
  for (const auto& s : spec.series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      take_y(y);
    }
  // Nothing to draw (every run failed, or no value is positive on the log scale): axes from 0 to 1
  // and a note, not coordinates of NaN.
  const bool empty = !std::isfinite(y0);
  if (!std::isfinite(x0) || !std::isfinite(x1)) x0 = 0, x1 = 1;
  // Baselines far below the curves (a noise-free ridge oracle is ~1e-14) would squash them: only
  // those within three decades of the lowest curve point set the range; others are listed.
  // With no curve point at all, every plottable baseline sets the range (none would sit off it).
  const double lowest = empty ? 0.0 : y0;
  for (const auto& b : spec.baselines)
    if (b.second >= lowest * 1e-3) take_y(b.second);
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y0 = y0 > 0 && std::isfinite(y0) ? y0 / 10 : 1e-3, y1 = y0 * 100;
  const double ly0 = std::floor(std::log10(y0)), ly1 = std::ceil(std::log10(y1));
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + (ly1 - std::log10(y)) / std::max(ly1 - ly0, 1.0) * ph; };

  std::ostringstream o;
  o.precision(6);
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kWidth << "' height='" << kHeight
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << kWidth / 2 << "' y='22' text-anchor='middle' font-size='15'>" << escape(spec.title) << "</text>\n";
  for (double e = ly0; e <= ly1; e += 1) {  // decades
    const double y = py(std::pow(10.0, e));
    o << "<line x1='" << kLeft << "' x2='" << kLeft + pw << "' y1='" << y << "' y2='" << y << "' stroke='#ddd'/>"
      << "<text x='" << kLeft - 6 << "' y='" << y + 4 << "' text-anchor='end'>1e" << int(e) << "</text>\n";
  }
  // Small integer ranges (layers, settings) get one tick per integer; others five.
  const bool integral = x1 - x0 <= 10 && x0 == std::floor(x0) && x1 == std::floor(x1);
  const int ticks = integral ? int(x1 - x0) : 5;
  for (int i = 0; i <= ticks; ++i) {
    const double x = x0 + (x1 - x0) * i / ticks;
    o << "<text x='" << px(x) << "' y='" << kTop + ph + 18 << "' text-anchor='middle'>" << std::llround(x) << "</text>\n";
  }
  o << "<rect x='" << kLeft << "' y='" << kTop << "' width='" << pw << "' height='" << ph
    << "' fill='none' stroke='#333'/>\n";
  if (empty)
    o << "<text x='" << kLeft + pw / 2 << "' y='" << kTop + ph / 2
      << "' text-anchor='middle'>no finite positive value to plot</text>\n";
  o << "<text x='" << kLeft + pw / 2 << "' y='" << kHeight - 10 << "' text-anchor='middle'>" << escape(spec.x_label)
    << "</text>\n<text transform='translate(16," << kTop + ph / 2 << ") rotate(-90)' text-anchor='middle'>"
    << escape(spec.y_label) << "</text>\n";
  size_t color = 0;
  double legend_y = kTop + 10;
  auto legend = [&](const std::string& name, const char* c, bool dashed) {
    o << "<line x1='" << kLeft + pw + 12 << "' x2='" << kLeft + pw + 36 << "' y1='" << legend_y << "' y2='" << legend_y
      << "' stroke='" << c << "' stroke-width='2'" << (dashed ? " stroke-dasharray='5,3'" : "") << "/><text x='"
      << kLeft + pw + 42 << "' y='" << legend_y + 4 << "'>" << escape(name) << "</text>\n";
    legend_y += 18;
  };
  for (const auto& s : spec.series) {
    const char* c = kColors[color++ % 8];
    o << "<polyline fill='none' stroke='" << c << "' stroke-width='1.5'" << (s.dashed ? " stroke-dasharray='5,3'" : "")
      << " points='";
    for (auto [x, y] : s.points)
      if (std::isfinite(y) && y > 0) o << px(x) << "," << py(std::clamp(y, y0, y1)) << " ";
    o << "'/>\n";
    legend(s.name, c, s.dashed);
  }
  for (const auto& [name, y] : spec.baselines) {
    if (!std::isfinite(y)) continue;
    const char* c = kColors[color++ % 8];
    if (y < y0) {  // off the axis: named with its value
      char text[64];
      std::snprintf(text, sizeof text, " (%.2g, below)", y);
      legend(name + text, c, true);
      continue;
    }
    o << "<line x1='" << kLeft << "' x2='" << kLeft + pw << "' y1='" << py(y) << "' y2='" << py(y) << "' stroke='" << c
      << "' stroke-dasharray='2,3'/>\n";
    legend(name, c, true);
  }
  o << "</svg>\n";
  return o.str();
}

bool write_text_atomic(const std::string& path, const std::string& text, std::string* error) {
  const rill::Status s =
      rill::write_file_atomic(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  if (!s.is_ok() && error) *error = s.message();
  return s.is_ok();
}

}  // namespace rill_cli
