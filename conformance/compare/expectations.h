// Expectations: the differences an implementation is known to have, in one format and with one mechanism
// for every path (lockstep run on any engine or driver, replay of fixtures, mutants).
//
// File format (strict: an unknown field is an error naming its JSON pointer):
//   {"expectations": [
//     {"id": "tut001-set-to-none-*", "reason": "why", "category": "api_difference"},
//     {"id": "*", "fields": ["* → state.exists", "group * → lr"], "reason": "...", "category": "api_difference"}
//   ]}
// - "id": a glob on case ids (fixture ids, named case ids, "random-N"). Globs: '*' matches any run of
//   characters (also none), '?' exactly one character, everything else itself; no escapes.
// - "fields" (optional): globs on the comparator's field paths (comparator.h: "w → grad[1,2]",
//   "w → state.step", "handle g0 → value[3]", "group 0 → lr", "output → value", "error.kind").
//   An entry with fields is a MASK: a difference whose path matches one of them is accepted and recorded
//   (the report lists it, with the reason), and the comparison of the case goes on; a later difference no
//   mask matches fails the case. A case with masked differences only is reported as known.
//   An entry without fields says the WHOLE CASE is expected to fail (any difference, a driver failure, an
//   exception): a failing case is reported as known (an expected failure); a passing one as an unexpected
//   pass, which is a failure (the file must say what is true).
// - "reason": non-empty; "category" (optional): one of expectation_categories(); "comment": ignored.
// Accepted for files written before: the key "expected_failures" instead of "expectations", a top-level
// array of entries, and "field" (one glob) instead of "fields".
// An entry that matches no case of a run is reported as stale.
//
// Example:
//   Expectations e = load_expectations("fixtures/expectations/pytorch-python.json");
//   FieldMask mask = e.mask_for("random-17");
//   if (const Expectation* x = mask.match("w → state.exists")) ... x->reason ...
//   if (const Expectation* x = e.whole_case("tut001-set-to-none-leaves-none")) ... expected to fail ...
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/glob.h"

namespace lockstep {

struct Expectation {
  std::string id;                   // glob on the case id
  std::vector<std::string> fields;  // globs on field paths; empty: the whole case is expected to fail
  std::string reason;
  std::string category;             // empty when not given
};

// {"api_difference", "implementation_bug", "not_implemented", "precision", "protocol"}
const std::vector<std::string>& expectation_categories();

// The masks that apply to one case: the entries with fields whose id matches it.
class FieldMask {
 public:
  // The first entry one of whose field globs matches `path`; nullptr when none does.
  const Expectation* match(const std::string& path) const;
  bool empty() const { return entries_.empty(); }

 private:
  friend struct Expectations;
  std::vector<const Expectation*> entries_;  // point into the Expectations, which must outlive the mask
};

struct Expectations {
  std::vector<Expectation> entries;

  FieldMask mask_for(const std::string& case_id) const;
  // The first entry without fields whose id matches: the case is expected to fail.
  const Expectation* whole_case(const std::string& case_id) const;
  // The ids of entries that match none of `case_ids`.
  std::vector<std::string> stale(const std::vector<std::string>& case_ids) const;
  void append(const Expectations& more);
};


// Strict readers; throw InputError (program_json.h) naming the file and the JSON pointer.
Expectations expectations_from_json(const nlohmann::ordered_json& doc, const std::string& file);
Expectations load_expectations(const std::string& path);

// The file shipped with the source tree for impl: conformance/compare/expectations.json.
std::string default_expectations_file();

}  // namespace lockstep
