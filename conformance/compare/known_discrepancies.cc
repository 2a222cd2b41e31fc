// Known discrepancies: the file format, validation and matching (see known_discrepancies.h).
#include "conformance/compare/known_discrepancies.h"

#include "conformance/program/program_json.h"

#include <fstream>
#include <sstream>

#include "conformance/program/json_reader.h"

namespace lockstep {

namespace {

std::string error_text(const std::string& file, const std::string& pointer, const std::string& message) {
  return pointer.empty() ? file + ": " + message : file + ": " + pointer + ": " + message;
}

}  // namespace

KnownDiscrepancyError::KnownDiscrepancyError(std::string file, std::string pointer, std::string message)
    : std::runtime_error(error_text(file, pointer, message)), file_(std::move(file)), pointer_(std::move(pointer)) {}

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative matcher with single-star backtracking: linear in practice, never recursive.
  size_t p = 0, t = 0, star = std::string::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const KnownDiscrepancy* KnownDiscrepancies::explain(const std::string& case_id,
                                                    const std::vector<std::string>& paths) const {
  if (paths.empty()) {
    for (const KnownDiscrepancy& k : entries)
      if (!k.field && glob_match(k.id, case_id)) return &k;
    return nullptr;
  }
  const KnownDiscrepancy* first = nullptr;
  for (size_t i = 0; i < paths.size(); ++i) {
    const KnownDiscrepancy* found = nullptr;
    for (const KnownDiscrepancy& k : entries) {
      if (glob_match(k.id, case_id) && (!k.field || glob_match(*k.field, paths[i]))) {
        found = &k;
        break;
      }
    }
    if (!found) return nullptr;
    if (i == 0) first = found;
  }
  return first;
}

KnownDiscrepancies known_discrepancies_from_json(const nlohmann::ordered_json& doc, const std::string& source) {
  KnownDiscrepancies out;
  try {
    if (!doc.is_array())
      throw JsonError("", std::string("expected an array of known discrepancies, found ") + json_type_name(doc));
    for (size_t i = 0; i < doc.size(); ++i) {
      const std::string pointer = json_pointer_append("", i);
      if (!doc[i].is_object())
        throw JsonError(pointer, std::string("expected an object, found ") + json_type_name(doc[i]));
      JsonObjectReader r(doc[i], pointer, "a known discrepancy");
      KnownDiscrepancy k;
      k.id = r.string("id");
      if (k.id.empty()) throw JsonError(r.pointer("id"), "\"id\" must not be empty");
      if (r.has("field")) {
        k.field = r.string("field");
        if (k.field->empty()) throw JsonError(r.pointer("field"), "\"field\" must not be empty (omit it instead)");
      }
      k.reason = r.string("reason");
      if (k.reason.empty()) throw JsonError(r.pointer("reason"), "\"reason\" must not be empty");
      r.finish(/*allow_comment=*/true);
      out.entries.push_back(std::move(k));
    }
  } catch (const JsonError& e) {
    throw KnownDiscrepancyError(source, e.pointer(), e.message());
  }
  return out;
}

KnownDiscrepancies known_discrepancies_from_text(const std::string& text, const std::string& source) {
  nlohmann::ordered_json doc;
  try {
    doc = parse_json_text(text, 16);
  } catch (const JsonError& e) {
    throw KnownDiscrepancyError(source, e.pointer(), e.message());
  }
  return known_discrepancies_from_json(doc, source);
}

KnownDiscrepancies load_known_discrepancies(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const InputError& e) {
    throw KnownDiscrepancyError(path, "", e.message());
  }
  return known_discrepancies_from_text(text, path);
}

std::string default_known_discrepancies_file() {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/conformance/compare/known_discrepancies.json";
}

}  // namespace lockstep
