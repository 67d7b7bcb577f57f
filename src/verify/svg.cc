// VerifyErrorSvg: relative error by query position, log scale, one colour per group.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "kvtopo/verify.h"

namespace kvtopo {

std::string VerifyErrorSvg(const VerifyReport& report, double max_relative_error) {
  constexpr double kWidth = 900, kHeight = 360, kLeft = 80, kRight = 260, kTop = 30, kBottom = 50;
  constexpr double kFloorExp = -12;  // errors below 1e-12 (exact results too) sit on the floor
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  int64_t max_position = 1;
  double top_exp = std::ceil(std::log10(max_relative_error)) + 1;
  for (const VerifyErrorPoint& e : report.errors) {
    max_position = std::max(max_position, e.position);
    if (std::isfinite(e.rel_error) && e.rel_error > 0) {
      top_exp = std::max(top_exp, std::ceil(std::log10(e.rel_error)));
    }
  }
  top_exp = std::min(top_exp, 3.0);
  auto x_of = [&](int64_t position) {
    return kLeft + plot_w * static_cast<double>(position) / static_cast<double>(max_position);
  };
  auto y_of = [&](double rel) {
    double e = !std::isfinite(rel) ? top_exp : rel > 0 ? std::log10(rel) : kFloorExp;
    e = std::clamp(e, kFloorExp, top_exp);
    return kTop + plot_h * (top_exp - e) / (top_exp - kFloorExp);
  };
  static constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                             "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  std::map<int32_t, const char*> colour;
  for (const VerifyGroupReport& g : report.groups) {
    if (g.attention) colour[g.group] = kColours[colour.size() % 8];
  }
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"18\" font-size=\"13\">kvtopo verify: {3}, {4} DCP ranks, {5} "
      "queries: relative error of the merged output by query position</text>\n",
      kWidth, kHeight, kLeft, report.model, report.dcp_size, report.queries);
  for (double e = kFloorExp; e <= top_exp; e += 2) {
    const double y = y_of(std::pow(10.0, e));
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}1e{6}</text>\n",
        kLeft, kLeft + plot_w, y, kLeft - 6, y + 4, e == kFloorExp ? "0, &#8804; " : "",
        static_cast<int>(e));
  }
  for (int i = 0; i <= 4; ++i) {
    const int64_t p = max_position * i / 4;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       x_of(p), kTop + plot_h + 16, p);
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">query position (tokens)</text>\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
      kLeft + plot_w / 2, kHeight - 10, kLeft, kTop, plot_w, plot_h);
  const double tol_y = y_of(max_relative_error);
  svg += fmt::format(
      "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\" "
      "stroke-dasharray=\"5,4\"/><text x=\"{1}\" y=\"{3:.1f}\" text-anchor=\"end\">tolerance "
      "{4:.0e}</text>\n",
      kLeft, kLeft + plot_w, tol_y, tol_y - 4, max_relative_error);
  for (const VerifyErrorPoint& e : report.errors) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" "
        "fill-opacity=\"0.6\"/>\n",
        x_of(e.position), y_of(e.rel_error), colour[e.group]);
  }
  double legend_y = kTop + 10;
  for (const VerifyGroupReport& g : report.groups) {
    if (!g.attention) continue;
    svg += fmt::format(
        "<circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"4\" fill=\"{2}\"/><text x=\"{3:.1f}\" "
        "y=\"{4:.1f}\">group {5} {6} {7} ({8})</text>\n",
        kLeft + plot_w + 14, legend_y, colour[g.group], kLeft + plot_w + 22, legend_y + 4, g.group,
        g.kind, g.role, g.placement);
    legend_y += 18;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace kvtopo
