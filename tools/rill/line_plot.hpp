// A small SVG line plot (log-scale y) for training curves: named series of (x, y) points plus
// horizontal reference lines (baselines).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rill_cli {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  std::vector<std::pair<std::string, double>> baselines;  // horizontal lines
};

std::string line_plot_svg(const PlotSpec& spec);

// Writes text to `path` with rill::write_file_atomic (never a half-written file); on failure
// `error` says why, naming the path and the system's reason.
bool write_text_atomic(const std::string& path, const std::string& text, std::string* error);

}  // namespace rill_cli
