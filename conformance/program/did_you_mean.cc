#include "conformance/program/did_you_mean.h"

#include <algorithm>

namespace lockstep {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& known) {
  if (typed.empty() || typed.size() > 200) return "";
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = k.rfind(typed, 0) == 0 ? 1 : edit_distance(typed, k);
    const size_t allowed = std::max<size_t>(2, std::max(typed.size(), k.size()) / 3);
    if (d > allowed) continue;
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace lockstep
