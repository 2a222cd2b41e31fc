// Exact JSON numbers: how tensors, options and scalars are written and read so that they round-trip.
//
// Doubles are written as the shortest decimal that reads back to the same double; float32 values as the
// shortest decimal that reads back to the same float (0.1f is written 0.1, not 0.10000000149011612).
// NaN, +inf and -inf are not JSON numbers: they are written as the strings "NaN", "Infinity", "-Infinity".
// -0.0 is written -0.0. Reading accepts JSON numbers and those three strings.
//
// Example:
//   nlohmann::ordered_json j = values_to_json({0.1f, -0.0, NAN}, DType::Float32);  // [0.1, -0.0, "NaN"]
//   std::vector<double> v = values_from_json(j, "/params/0/values", DType::Float32);
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/program.h"

namespace lockstep {

nlohmann::ordered_json number_to_json(double v);         // a double, shortest round trip
nlohmann::ordered_json float_number_to_json(double v);   // a float32 value (held as double); a value that
                                                         // is not exactly a float is written as a double
nlohmann::ordered_json number_to_json(double v, DType dtype);
nlohmann::ordered_json values_to_json(const std::vector<double>& values, DType dtype);

// A number or "NaN" / "Infinity" / "-Infinity"; otherwise JsonError (json_reader.h) at `pointer`.
double number_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
// An array of those. For float32, each value is rounded to the nearest float (as a float32 tensor would
// hold it), so that a float32 tensor read from a file holds float values (program.h, TensorValue).
std::vector<double> values_from_json(const nlohmann::ordered_json& j, const std::string& pointer, DType dtype);

}  // namespace lockstep
