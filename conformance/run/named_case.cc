#include "conformance/run/named_case.h"
#include "conformance/program/data_dir.h"

#include "conformance/run/capabilities.h"

#include <iostream>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "conformance/program/file_system.h"
#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/program/trace_json.h"

namespace lockstep {

namespace {

using json = nlohmann::ordered_json;

// "after": an action index or "init".
int read_after(const json& j, const std::string& pointer, size_t action_count) {
  if (j.is_string() && j.get<std::string>() == "init") return -1;
  int64_t i = index_from_json(j, pointer);
  if (i >= static_cast<int64_t>(action_count))
    throw JsonError(pointer, fmt::format("action {} does not exist (the program has {} actions)", i,
                                         action_count));
  return static_cast<int>(i);
}

// A check's pointer into a record: JSON pointer syntax, and array indices a record can have (a record holds at
// most ProgramLimits' elements per tensor, 2^20): an index beyond is a read error here, naming the case file and
// the check, instead of an exception from the JSON library when the check runs (issue 14).
void check_pointer_syntax(const std::string& p, const std::string& where) {
  try {
    json::json_pointer ptr(p);
  } catch (const json::exception& e) {
    throw JsonError(where, "not a JSON pointer: '" + p + "'");
  }
  size_t start = 1;
  while (start <= p.size()) {
    const size_t end = std::min(p.find('/', start), p.size());
    const std::string token = p.substr(start, end - start);
    if (!token.empty() && token.size() > 7 && std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw JsonError(where, "array index " + token + " in '" + p + "' is beyond any record (at most 2^20 elements)");
    start = end + 1;
  }
}

CaseCheck read_check(const json& j, const std::string& pointer, size_t action_count) {
  JsonObjectReader r(j, pointer, "a check");
  CaseCheck c;
  c.after = read_after(r.required("after"), r.pointer("after"), action_count);
  c.pointer = r.string("pointer");
  check_pointer_syntax(c.pointer, r.pointer("pointer"));
  if (const json* tol = r.optional("tolerance")) c.tolerance = number_from_json(*tol, r.pointer("tolerance"));
  if (const json* when = r.optional("when")) {
    JsonObjectReader w(*when, r.pointer("when"), "a check's condition");
    c.when_pytorch = w.string("pytorch");
    try {
      version_condition_holds(c.when_pytorch, "1.0");
    } catch (const std::invalid_argument& e) {
      throw JsonError(w.pointer("pytorch"), e.what());
    }
    w.finish(false);
  }
  int kinds = 0;
  if (const json* eq = r.optional("equals")) {
    c.kind = CaseCheck::Kind::Equals;
    c.equals = *eq;
    ++kinds;
  }
  if (const json* absent = r.optional("absent")) {
    if (!bool_from_json(*absent, r.pointer("absent")))
      throw JsonError(r.pointer("absent"), "\"absent\" can only be true");
    c.kind = CaseCheck::Kind::Absent;
    ++kinds;
  }
  if (const json* same = r.optional("same_as")) {
    JsonObjectReader s(*same, r.pointer("same_as"), "a same_as reference");
    c.kind = CaseCheck::Kind::SameAs;
    c.same_as_after = read_after(s.required("after"), s.pointer("after"), action_count);
    c.same_as_pointer = s.string("pointer");
    check_pointer_syntax(c.same_as_pointer, s.pointer("pointer"));
    s.finish(false);
    ++kinds;
  }
  if (kinds != 1) throw JsonError(pointer, "a check needs exactly one of \"equals\", \"absent\", \"same_as\"");
  r.finish(true);
  return c;
}

bool is_number_like(const json& j) {
  if (j.is_number()) return true;
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  return s == "NaN" || s == "Infinity" || s == "-Infinity";
}

// Deep comparison; numbers within a relative tolerance (NaN equals NaN). `where` names the first mismatch.
bool close(const json& actual, const json& expected, double tolerance, std::string& where, const std::string& at) {
  if (is_number_like(actual) && is_number_like(expected)) {
    double a = number_from_json(actual, at), e = number_from_json(expected, at);
    bool ok = (std::isnan(a) && std::isnan(e)) || a == e ||
              (std::isfinite(a) && std::isfinite(e) &&
               std::fabs(a - e) <= tolerance * std::max(std::fabs(a), std::fabs(e)));
    if (!ok) where = at;
    return ok;
  }
  if (actual.is_array() && expected.is_array()) {
    if (actual.size() != expected.size()) {
      where = fmt::format("{} (length {} vs {})", at.empty() ? "/" : at, actual.size(), expected.size());
      return false;
    }
    for (size_t i = 0; i < actual.size(); ++i)
      if (!close(actual[i], expected[i], tolerance, where, json_pointer_append(at, i))) return false;
    return true;
  }
  if (actual.is_object() && expected.is_object()) {
    if (actual.size() != expected.size()) {
      where = (at.empty() ? "/" : at) + " (different fields)";
      return false;
    }
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (!actual.contains(it.key())) {
        where = json_pointer_append(at, it.key()) + " (missing)";
        return false;
      }
      if (!close(actual.at(it.key()), it.value(), tolerance, where, json_pointer_append(at, it.key())))
        return false;
    }
    return true;
  }
  if (actual != expected) {
    where = at.empty() ? "/" : at;
    return false;
  }
  return true;
}

std::string record_label(int after) { return after < 0 ? "init" : fmt::format("action {}", after); }

}  // namespace

NamedCase read_case_file(const std::string& path) { return case_from_text(read_text_file(path), path); }

NamedCase case_from_text(const std::string& text, const std::string& path) {
  NamedCase c;
  c.file = path;
  try {
    json doc = parse_json_text(text, 256);
    JsonObjectReader r(doc, "", "a case");
    c.id = r.string("id");
    if (c.id.empty() || c.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos)
      throw JsonError("/id", "an id is made of lower-case letters, digits, '-', '_' and '.'");
    c.description = r.string("description");
    c.claim = r.has("claim") ? r.string("claim") : "";
    c.semantics = strings_from_json(r.required("semantics"), r.pointer("semantics"));
    c.tags = strings_from_json(r.required("tags"), r.pointer("tags"));
    c.program_json = r.required("program");
    try {
      c.program = program_from_json(c.program_json);
    } catch (const ProgramError& e) {
      throw ProgramError("/program" + e.path(), e.what());
    }
    const json& checks = array_from_json(r.required("checks"), r.pointer("checks"));
    for (size_t i = 0; i < checks.size(); ++i)
      c.checks.push_back(
          read_check(checks[i], json_pointer_append(r.pointer("checks"), i), c.program.actions.size()));
    r.finish(true);
  } catch (const JsonError& e) {
    throw InputError(path, e.pointer(), e.message());
  } catch (const ProgramError& e) {
    throw InputError(path, e.path(), e.what());
  }
  return c;
}

std::vector<NamedCase> load_cases(const std::string& dir) {
  if (!files::is_directory(dir)) throw InputError(dir, "", "not a directory of cases");
  std::vector<std::string> paths, skipped;
  try {
    paths = files::list_files(dir, {".json"}, /*recursive=*/false, {}, &skipped);
  } catch (const std::runtime_error& e) {
    throw InputError(dir, "", e.what());
  }
  for (const std::string& s : skipped) std::cerr << "lockstep: skipped " << s << "\n";  // said, never silent
  std::vector<NamedCase> cases;
  std::map<std::string, std::string> seen;
  for (const std::string& f : paths) {
    NamedCase c = read_case_file(f);
    auto [it, fresh] = seen.emplace(c.id, f);
    if (!fresh) throw InputError(f, "/id", "id '" + c.id + "' is already used by " + it->second);
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const NamedCase& a, const NamedCase& b) { return a.id < b.id; });
  return cases;
}

std::string default_cases_dir() { return data_dir() + "/conformance/cases"; }
std::string python_oracle_cases_dir() { return data_dir() + "/conformance/cases-python-oracle"; }

std::vector<std::string> check_case(const NamedCase& c, const Trace& trace, const std::string& pytorch_version) {
  std::vector<std::string> failures;
  auto record_json = [&](int after) {
    return record_to_json(after < 0 ? trace.init : trace.records.at(static_cast<size_t>(after)));
  };
  // A trace shorter than the program (a driver that answered too few records) fails the checks it cannot
  // answer, as a failure of this case; it never aborts the run.
  auto has_record = [&](int after) { return after < 0 || static_cast<size_t>(after) < trace.records.size(); };
  for (const CaseCheck& check : c.checks) {
    if (!check.when_pytorch.empty() && !version_condition_holds(check.when_pytorch, pytorch_version)) continue;
    const int missing = !has_record(check.after) ? check.after
                        : check.same_as_pointer.empty() || has_record(check.same_as_after) ? -1
                                                                                          : check.same_as_after;
    if (missing >= 0) {
      failures.push_back(fmt::format("{} {}: no record of action {} (the trace has {} records)",
                                     record_label(check.after), check.pointer, missing, trace.records.size()));
      continue;
    }
    json rec = record_json(check.after);
    json::json_pointer ptr(check.pointer);
    bool present = false;
    try {
      present = rec.contains(ptr);  // an index the library cannot represent is an absent value, not a crash
    } catch (const json::exception&) {
    }
    std::string label = record_label(check.after) + " " + check.pointer;
    switch (check.kind) {
      case CaseCheck::Kind::Absent:
        if (present) failures.push_back(fmt::format("{}: expected absent, found {}", label, rec.at(ptr).dump()));
        break;
      case CaseCheck::Kind::Equals: {
        std::string where;
        if (!present) failures.push_back(fmt::format("{}: missing (expected {})", label, check.equals.dump()));
        else if (!close(rec.at(ptr), check.equals, check.tolerance, where, ""))
          failures.push_back(fmt::format("{}: expected {}, found {} (first difference at {})", label,
                                         check.equals.dump(), rec.at(ptr).dump(), where));
        break;
      }
      case CaseCheck::Kind::SameAs: {
        json other = record_json(check.same_as_after);
        json::json_pointer optr(check.same_as_pointer);
        std::string other_label = record_label(check.same_as_after) + " " + check.same_as_pointer;
        std::string where;
        bool other_present = false;
        try {
          other_present = other.contains(optr);
        } catch (const json::exception&) {
        }
        if (!present || !other_present)
          failures.push_back(fmt::format("{} or {}: missing", label, other_label));
        else if (!close(rec.at(ptr), other.at(optr), check.tolerance, where, ""))
          failures.push_back(fmt::format("{}: {} differs from {}: {} (first difference at {})", label,
                                         rec.at(ptr).dump(), other_label, other.at(optr).dump(), where));
        break;
      }
    }
  }
  return failures;
}

}  // namespace lockstep
