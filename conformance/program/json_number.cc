// Exact JSON numbers (see json_number.h).
#include "conformance/program/json_number.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "conformance/program/json_reader.h"

namespace lockstep {

using nlohmann::ordered_json;

namespace {
ordered_json non_finite(double v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}
}  // namespace

ordered_json number_to_json(double v) {
  if (!std::isfinite(v)) return non_finite(v);
  // nlohmann writes a double with the shortest digits that read back to the same double (and -0.0 as -0.0).
  return v;
}

ordered_json float_number_to_json(double v) {
  if (!std::isfinite(v)) return non_finite(v);
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v || std::signbit(f) != std::signbit(v)) return v;  // not a float: keep it all
  // The shortest decimal that reads back to f, held as the double nearest to it: nlohmann then prints that
  // double's shortest form, which is the same decimal. Reading it as a double and rounding to float gives f.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f);
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}

ordered_json number_to_json(double v, DType dtype) {
  return dtype == DType::Float32 ? float_number_to_json(v) : number_to_json(v);
}

ordered_json values_to_json(const std::vector<double>& values, DType dtype) {
  ordered_json out = ordered_json::array();
  for (double v : values) out.push_back(number_to_json(v, dtype));
  return out;
}

double number_from_json(const ordered_json& j, const std::string& pointer) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
    throw JsonError(pointer, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\", got the string \"" +
                                 (s.size() > 40 ? s.substr(0, 37) + "..." : s) + "\"");
  }
  throw JsonError(pointer, std::string("expected a number, got ") + json_type_name(j));
}

std::vector<double> values_from_json(const ordered_json& j, const std::string& pointer, DType dtype) {
  const auto& a = array_from_json(j, pointer);
  std::vector<double> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    double v = number_from_json(a[i], json_pointer_append(pointer, i));
    out.push_back(dtype == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v);
  }
  return out;
}

}  // namespace lockstep
