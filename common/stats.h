// Small statistics and their text for verdict reasons: the median of a sample, a figure with
// a fixed number of decimals, a fraction as a whole percentage. Shared by the judge, the
// outlier detector and the sweep summary so that their reasons print figures the same way.
#pragma once

#include <string>
#include <vector>

namespace gdrmesh {

// The median of `v` (the mean of the two middle values for an even count); 0 for none.
double medianOf(std::vector<double> v);

// 12.345 -> "12.3" with digits 1.
std::string formatFixed(double v, int digits);

// 0.4 -> "40%".
std::string formatPercent(double fraction);

}  // namespace gdrmesh
