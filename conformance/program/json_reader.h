// Strict JSON reading helpers shared by the program and trace readers (program_json.h, trace_json.h).
//
// Every error names the JSON pointer (RFC 6901) of the offending value, so a user can find it in the file.
//
// Example:
//   nlohmann::ordered_json doc = parse_json_text(text, /*max_depth=*/200);   // throws JsonError
//   JsonObjectReader r(doc, "", "a program");
//   std::string name = r.string("name");                  // missing / not a string: JsonError at "/name"
//   std::optional<bool> flag = r.optional_bool("no_grad");
//   r.finish();                                            // an unknown field: JsonError at "/that_field"
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

// A document that does not have the expected form. what() is "POINTER: message" ("message" at the root).
class JsonError : public std::runtime_error {
 public:
  JsonError(std::string pointer, std::string message);
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string pointer_, message_;
};

// "/a" + "b~c/d" -> "/a/b~0c~1d" (RFC 6901 escaping).
std::string json_pointer_append(const std::string& pointer, const std::string& token);
std::string json_pointer_append(const std::string& pointer, size_t index);

// "object", "array", "string", "number", "boolean", "null".
const char* json_type_name(const nlohmann::ordered_json& j);

// The most values (numbers, strings, arrays, objects, ...) one document may hold: about 400 MB parsed at most
// (48 bytes a value in an object, 16 in an array). A trace within ProgramLimits::max_observed_values holds at
// most half of it.
inline constexpr int64_t kMaxJsonValues = int64_t{1} << 23;
// The most keys one object may hold (a trace's handles are the largest: within the limits, a few hundred).
inline constexpr int64_t kMaxJsonObjectKeys = 1024;

// Parses JSON text strictly: invalid text, a key repeated within one object, nesting deeper than `max_depth`
// arrays/objects, more than kMaxJsonObjectKeys keys in an object or more than `max_values` values throw JsonError (the pointer of the repeated key, of the
// too-deep value or of the value past the limit, found before it is stored; the message of a syntax error holds
// its line and column). Never recurses on the input's nesting.
nlohmann::ordered_json parse_json_text(const std::string& text, int max_depth, int64_t max_values = kMaxJsonValues);

// Typed scalar readers (pointer = where `j` sits).
std::string string_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
bool bool_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
int64_t int_from_json(const nlohmann::ordered_json& j, const std::string& pointer);  // JSON integers only
int64_t index_from_json(const nlohmann::ordered_json& j, const std::string& pointer);  // integer >= 0
const nlohmann::ordered_json& array_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
std::vector<std::string> strings_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
std::vector<int64_t> indices_from_json(const nlohmann::ordered_json& j, const std::string& pointer);

// Reads the fields of one JSON object and rejects the fields nobody asked for.
class JsonObjectReader {
 public:
  // `what` names the object in messages ("an action", "a param").
  JsonObjectReader(const nlohmann::ordered_json& j, std::string pointer, std::string what);

  const std::string& pointer() const { return pointer_; }
  std::string pointer(const std::string& key) const { return json_pointer_append(pointer_, key); }
  bool has(const std::string& key) const;

  const nlohmann::ordered_json& required(const std::string& key);  // missing: JsonError at the object
  const nlohmann::ordered_json* optional(const std::string& key);  // nullptr when absent

  std::string string(const std::string& key);
  std::optional<bool> optional_bool(const std::string& key);

  // Accepts an optional "comment" string (ignored) when `allow_comment`; any other field not read is an
  // error naming its pointer.
  void finish(bool allow_comment);

 private:
  const nlohmann::ordered_json& j_;
  std::string pointer_, what_;
  std::set<std::string> read_;
};

}  // namespace lockstep
