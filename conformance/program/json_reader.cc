// Strict JSON reading helpers (see json_reader.h).
#include "conformance/program/json_reader.h"

#include <limits>
#include <utility>

namespace lockstep {

using nlohmann::ordered_json;

JsonError::JsonError(std::string pointer, std::string message)
    : std::runtime_error(pointer.empty() ? message : pointer + ": " + message),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

std::string json_pointer_append(const std::string& pointer, const std::string& token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string json_pointer_append(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

const char* json_type_name(const ordered_json& j) {
  switch (j.type()) {
    case ordered_json::value_t::object: return "object";
    case ordered_json::value_t::array: return "array";
    case ordered_json::value_t::string: return "string";
    case ordered_json::value_t::boolean: return "boolean";
    case ordered_json::value_t::null: return "null";
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
    case ordered_json::value_t::number_float: return "number";
    default: return "unsupported value";
  }
}

// ---------------------------------------------------------------------------------------------------------
// Parsing with a depth guard and duplicate-key detection. nlohmann's parser keeps its own stack on the heap
// (and 3.10+ destroys values iteratively), so the only thing to bound is the depth of what we build.

namespace {

struct ParseTracker {
  struct Frame {
    bool is_object;
    std::string key;      // the current key (objects)
    size_t index = 0;     // the current element (arrays)
    std::set<std::string> keys;
  };
  int max_depth;
  int64_t max_values;
  std::vector<Frame> frames;
  int64_t values = 0;

  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames) p = f.is_object ? json_pointer_append(p, f.key) : json_pointer_append(p, f.index);
    return p;
  }
  void element_done() {
    if (!frames.empty() && !frames.back().is_object) ++frames.back().index;
  }
  void open(bool is_object) {
    if (static_cast<int>(frames.size()) >= max_depth)
      throw JsonError(pointer(), "nesting deeper than " + std::to_string(max_depth) +
                                     " arrays/objects (the limit of this reader)");
    frames.push_back(Frame{is_object, "", 0, {}});
  }
  // Called as each value starts (before the parser stores it): the tree never holds more than the limit.
  void count_value() {
    if (++values > max_values)
      throw JsonError(pointer(), "more than " + std::to_string(max_values) +
                                     " JSON values in one document (the limit of this reader)");
  }
  bool on_event(nlohmann::detail::parse_event_t event, const ordered_json& parsed) {
    using E = nlohmann::detail::parse_event_t;
    if (event == E::object_start || event == E::array_start || event == E::value) count_value();
    switch (event) {
      case E::object_start: open(true); break;
      case E::array_start: open(false); break;
      case E::key: {
        Frame& f = frames.back();
        std::string key = parsed.get<std::string>();
        if (!f.keys.insert(key).second)
          throw JsonError(json_pointer_append(pointer_without_top_key(), key),
                          "key '" + key + "' appears more than once in this object");
        // An ordered object finds a key by scanning the ones before it: keys per object are bounded so that
        // reading stays near linear (no format of lockstep's has more than a few hundred).
        if (static_cast<int64_t>(f.keys.size()) > kMaxJsonObjectKeys)
          throw JsonError(json_pointer_append(pointer_without_top_key(), key),
                          "more than " + std::to_string(kMaxJsonObjectKeys) +
                              " keys in one object (the limit of this reader)");
        f.key = std::move(key);
        break;
      }
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        element_done();
        break;
      case E::value:
        element_done();
        break;
    }
    return true;
  }
  std::string pointer_without_top_key() const {
    std::string p;
    for (size_t i = 0; i + 1 < frames.size(); ++i) {
      const Frame& f = frames[i];
      p = f.is_object ? json_pointer_append(p, f.key) : json_pointer_append(p, f.index);
    }
    return p;
  }
};

std::string strip_nlohmann_prefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> "parse error at ..."
  if (!what.empty() && what[0] == '[') {
    size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

}  // namespace

ordered_json parse_json_text(const std::string& text, int max_depth, int64_t max_values) {
  ParseTracker tracker{max_depth, max_values, {}};
  ordered_json::parser_callback_t callback = [&tracker](int, nlohmann::detail::parse_event_t event,
                                                        ordered_json& parsed) {
    return tracker.on_event(event, parsed);
  };
  try {
    return ordered_json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const ordered_json::parse_error& e) {
    throw JsonError("", "invalid JSON: " + strip_nlohmann_prefix(e.what()) + " (byte " +
                            std::to_string(e.byte) + ")");
  } catch (const ordered_json::exception& e) {
    // A number out of range (1e999999) has no line: the pointer of the value being read says where (issue 29).
    throw JsonError(tracker.pointer(), "invalid JSON: " + strip_nlohmann_prefix(e.what()));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Typed readers.

namespace {
[[noreturn]] void wrong_type(const ordered_json& j, const std::string& pointer, const char* expected) {
  std::string shown = j.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  throw JsonError(pointer, std::string("expected ") + expected + ", got " + json_type_name(j) + " " + shown);
}
}  // namespace

std::string string_from_json(const ordered_json& j, const std::string& pointer) {
  if (!j.is_string()) wrong_type(j, pointer, "a string");
  return j.get<std::string>();
}

bool bool_from_json(const ordered_json& j, const std::string& pointer) {
  if (!j.is_boolean()) wrong_type(j, pointer, "true or false");
  return j.get<bool>();
}

int64_t int_from_json(const ordered_json& j, const std::string& pointer) {
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw JsonError(pointer, "integer " + j.dump() + " is out of range");
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  wrong_type(j, pointer, "an integer");
}

int64_t index_from_json(const ordered_json& j, const std::string& pointer) {
  if (!j.is_number_integer()) wrong_type(j, pointer, "a non-negative integer");
  int64_t v = int_from_json(j, pointer);
  if (v < 0) throw JsonError(pointer, "expected a non-negative integer, got " + std::to_string(v));
  return v;
}

const ordered_json& array_from_json(const ordered_json& j, const std::string& pointer) {
  if (!j.is_array()) wrong_type(j, pointer, "an array");
  return j;
}

std::vector<std::string> strings_from_json(const ordered_json& j, const std::string& pointer) {
  std::vector<std::string> out;
  const auto& a = array_from_json(j, pointer);
  for (size_t i = 0; i < a.size(); ++i) out.push_back(string_from_json(a[i], json_pointer_append(pointer, i)));
  return out;
}

std::vector<int64_t> indices_from_json(const ordered_json& j, const std::string& pointer) {
  std::vector<int64_t> out;
  const auto& a = array_from_json(j, pointer);
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(index_from_json(a[i], json_pointer_append(pointer, i)));
  return out;
}

// ---------------------------------------------------------------------------------------------------------

JsonObjectReader::JsonObjectReader(const ordered_json& j, std::string pointer, std::string what)
    : j_(j), pointer_(std::move(pointer)), what_(std::move(what)) {
  if (!j_.is_object()) wrong_type(j_, pointer_, ("an object (" + what_ + ")").c_str());
}

bool JsonObjectReader::has(const std::string& key) const { return j_.contains(key); }

const ordered_json& JsonObjectReader::required(const std::string& key) {
  auto it = j_.find(key);
  if (it == j_.end()) throw JsonError(pointer_, what_ + " needs the field '" + key + "'");
  read_.insert(key);
  return *it;
}

const ordered_json* JsonObjectReader::optional(const std::string& key) {
  auto it = j_.find(key);
  if (it == j_.end()) return nullptr;
  read_.insert(key);
  return &*it;
}

std::string JsonObjectReader::string(const std::string& key) {
  return string_from_json(required(key), pointer(key));
}

std::optional<bool> JsonObjectReader::optional_bool(const std::string& key) {
  const ordered_json* v = optional(key);
  if (!v) return std::nullopt;
  return bool_from_json(*v, pointer(key));
}

void JsonObjectReader::finish(bool allow_comment) {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (read_.count(it.key())) continue;
    if (allow_comment && it.key() == "comment") {
      string_from_json(it.value(), pointer("comment"));
      continue;
    }
    throw JsonError(pointer(it.key()), "unknown field '" + it.key() + "' in " + what_);
  }
}

}  // namespace lockstep
