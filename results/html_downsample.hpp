// Downsampling of long curves for the HTML report: Largest-Triangle-Three-Buckets (LTTB,
// S. Steinarsson, "Downsampling Time Series for Visual Representation", 2013). The first
// and last points are kept; the points between are split into (n - 2) buckets of equal
// count, and from each bucket the point forming the largest triangle with the point kept
// from the previous bucket and the mean of the next bucket is kept. It keeps peaks and
// troughs (a loss spike survives) where taking every k-th point would drop them, and costs
// O(points). Non-finite y values are dropped before sampling (a diverged loss ends the
// line there). Input x must be non-decreasing.
#pragma once

#include <cstddef>
#include <vector>

namespace dsgd {

// Indices (increasing) of at most max_points points of (x, y) chosen by LTTB; every
// index when there are no more than max_points finite points. max_points < 3 keeps the
// first and last points only.
std::vector<size_t> lttb_indices(const std::vector<double>& x, const std::vector<double>& y, size_t max_points);

}  // namespace dsgd
