// API profiles (api_profile.h).
#include "conformance/run/api_profile.h"
#include "conformance/program/data_dir.h"

#include <sys/stat.h>

#include <cctype>

#include "conformance/program/features.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"

namespace lockstep {
namespace {

using json = nlohmann::ordered_json;

std::vector<std::string> string_list(JsonObjectReader& r, const std::string& key, bool feature_names) {
  std::vector<std::string> out;
  const json* list = r.optional(key);
  if (!list) return out;
  const std::string p = r.pointer(key);
  if (!list->is_array() || list->empty()) throw JsonError(p, "expected a non-empty array of strings");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& s = (*list)[i];
    if (!s.is_string() || s.get<std::string>().empty())
      throw JsonError(json_pointer_append(p, i), "expected a non-empty string");
    const std::string v = s.get<std::string>();
    if (feature_names && !matches_some_feature(v))
      throw JsonError(json_pointer_append(p, i), "'" + v + "' matches no feature (`lockstep features` lists them)");
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::string default_profiles_dir() { return data_dir() + "/fixtures/profiles"; }

std::string profile_path(const std::string& name_or_path, bool allow_files) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (!allow_files) {
    bool plain = !name_or_path.empty();
    for (char c : name_or_path) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
    if (!plain)
      throw InputError(name_or_path, "", "a driver's hello may name only a profile shipped in " + default_profiles_dir() +
                                              " (letters, digits, '-', '_'); a profile file is given with --profile");
  }
  const std::string path = is_path ? name_or_path : default_profiles_dir() + "/" + name_or_path + ".json";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(path, "", is_path ? "no such profile file" : "no API profile named '" + name_or_path + "' (profiles live in " + default_profiles_dir() + ")");
  return path;
}

ApiProfile load_profile(const std::string& path) { return profile_from_text(read_text_file(path), path); }

ApiProfile profile_from_text(const std::string& text, const std::string& path) {
  ApiProfile p;
  p.file = path;
  try {
    const json doc = parse_json_text(text, 16);
    JsonObjectReader top(doc, "", "a profile");
    p.name = top.string("profile");
    if (p.name.empty()) throw JsonError("/profile", "must not be empty");
    if (top.has("description")) p.description = top.string("description");
    if (top.has("extends")) {
      // The base profile's rules first (a shipped one, by name; one level is all a profile needs).
      const std::string base = top.string("extends");
      std::string base_path;
      try {
        base_path = profile_path(base, /*allow_files=*/false);
      } catch (const InputError& e) {
        throw JsonError("/extends", e.message());
      }
      if (base_path == path) throw JsonError("/extends", "a profile cannot extend itself");
      ApiProfile b = load_profile(base_path);
      p.rules = std::move(b.rules);
    }
    const json& rules = top.required("rules");
    if (!rules.is_array() || rules.empty()) throw JsonError("/rules", "expected a non-empty array of rules");
    for (size_t i = 0; i < rules.size(); ++i) {
      JsonObjectReader r(rules[i], json_pointer_append("/rules", i), "a profile rule");
      ProfileRule rule;
      rule.id = r.string("id");
      if (rule.id.empty()) throw JsonError(r.pointer("id"), "must not be empty");
      for (const ProfileRule& other : p.rules)
        if (other.id == rule.id) throw JsonError(r.pointer("id"), "duplicate rule id '" + rule.id + "' (also in the base profile?)");
      rule.when = string_list(r, "when", true);
      if (rule.when.empty()) throw JsonError(r.pointer(), "a rule needs \"when\" (feature globs)");
      rule.avoid = r.optional_bool("avoid").value_or(false);
      rule.fields = string_list(r, "fields", false);
      rule.errors = string_list(r, "errors", false);
      if (rule.avoid == !rule.fields.empty())
        throw JsonError(r.pointer(), "a rule gives either \"avoid\": true or \"fields\" (differences it expects)");
      if (!rule.errors.empty() && rule.fields.empty())
        throw JsonError(r.pointer("errors"), "\"errors\" narrows \"fields\": give \"fields\" too");
      for (const char* key : {"expected", "actual"}) {
        if (!r.has(key)) continue;
        if (rule.fields.empty()) throw JsonError(r.pointer(key), std::string("\"") + key + "\" narrows \"fields\": give \"fields\" too");
        (std::string(key) == "expected" ? rule.expected : rule.actual) = r.string(key);
      }
      if (r.has("semantics")) rule.semantics = r.string("semantics");
      rule.reason = r.string("reason");
      if (rule.reason.empty()) throw JsonError(r.pointer("reason"), "must not be empty");
      r.finish(true);
      p.rules.push_back(std::move(rule));
    }
    top.finish(true);
  } catch (const JsonError& e) {
    throw InputError(path, e.pointer(), e.message());
  }
  return p;
}

void apply_profile(const ApiProfile& profile, FeatureScope& scope, Expectations& expectations) {
  for (const ProfileRule& rule : profile.rules) {
    const std::string reason = (rule.semantics.empty() ? "" : rule.semantics + " ") + rule.reason;
    if (rule.avoid) {
      scope.exclude(rule.when, "profile " + profile.name + " rule " + rule.id + ": " + reason, "profile");
      continue;
    }
    Expectation e;
    e.id = "*";
    e.features = rule.when;
    e.fields = rule.fields;
    e.errors = rule.errors;
    e.expected_value = rule.expected;
    e.actual_value = rule.actual;
    e.reason = "profile " + profile.name + " rule " + rule.id + ": " + reason;
    e.category = "api_difference";
    e.source = "profile " + profile.name + " rule " + rule.id;
    expectations.entries.push_back(std::move(e));
  }
}

}  // namespace lockstep
