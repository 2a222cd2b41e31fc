// PyTorch versions and version conditions (pytorch_version.h).
#include "conformance/program/pytorch_version.h"

#include <cctype>
#include <stdexcept>

namespace lockstep {

std::optional<std::pair<int, int>> parse_pytorch_version(const std::string& text) {
  auto digit = [&](size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); };
  // A number of at most 6 digits starting at i; -1 when there is none (or a longer one: not a version).
  auto number = [&](size_t& i) {
    const size_t start = i;
    int value = 0;
    while (digit(i)) {
      if (i - start < 6) value = value * 10 + (text[i] - '0');
      ++i;
    }
    return i == start || i - start > 6 ? -1 : value;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (!digit(i) || (i > 0 && digit(i - 1))) continue;
    size_t j = i;
    const int major = number(j);
    if (major < 0 || j >= text.size() || text[j] != '.') continue;
    ++j;
    const int minor = number(j);
    if (minor >= 0) return std::make_pair(major, minor);
  }
  return std::nullopt;
}

bool version_condition_holds(const std::string& condition, const std::string& version) {
  static const char* const kOps[] = {">=", "<=", ">", "<"};
  std::string op;
  for (const char* o : kOps)
    if (condition.rfind(o, 0) == 0) { op = o; break; }
  const auto bound = op.empty() ? std::nullopt : parse_pytorch_version(condition.substr(op.size()));
  if (!bound)
    throw std::invalid_argument("cannot read the version condition '" + condition +
                                "' (expected an operator >=, <=, > or < and a version, e.g. \">=2.0\")");
  const auto v = parse_pytorch_version(version);
  if (!v) return false;
  if (op == ">=") return *v >= *bound;
  if (op == "<=") return *v <= *bound;
  if (op == ">") return *v > *bound;
  return *v < *bound;
}

}  // namespace lockstep
