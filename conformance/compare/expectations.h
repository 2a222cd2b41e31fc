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
//   mask matches fails the case. A case with masked differences only is reported as known (one whose masks all
//   came from an API profile, api_profile.h, passes: the profile is the API the implementation declared).
//   An entry without fields says the WHOLE CASE is expected to fail (any difference, a driver failure, an
//   exception): a failing case is reported as known (an expected failure); a passing one as an unexpected
//   pass, which is a failure (the file must say what is true).
// - "features" (optional): globs on the features of the case's program (conformance/program/features.h),
//   all of which must match one of them: a rule for live runs, whatever the case id ("id" defaults to "*").
//   {"features": ["sgd"], "fields": ["* → state.exists"], ...} masks SGD's state entries in every SGD program.
// - "errors" (optional, with "fields"): globs on error kinds (trace.h); the entry masks a difference only in a
//   record where the oracle or the implementation raised an error of such a kind.
// - "expected", "actual" (optional, with "fields"): globs on the difference's values as the comparator prints
//   them ("false", "true", "absent", "0.25"): {"fields": ["* → state.exists"], "expected": "false", "actual":
//   "true"} accepts an extra state entry, never a missing one.
// - "reason": non-empty; "category" (optional): one of expectation_categories(); "comment": ignored.
// Accepted for files written before: the key "expected_failures" instead of "expectations", a top-level
// array of entries, and "field" (one glob) instead of "fields".
// An entry that matches no case of a run is reported as stale; one that masked nothing and explained no
// case, as unused (unused_entries()).
//
// Example:
//   Expectations e = load_expectations("fixtures/expectations/pytorch-python.json");
//   FieldMask mask = e.mask_for("random-17");
//   if (const Expectation* x = mask.match("w → state.exists")) ... x->reason ...
//   if (const Expectation* x = e.whole_case("tut001-set-to-none-leaves-none")) ... expected to fail ...
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/program/glob.h"

namespace lockstep {

struct Expectation {
  std::string id = "*";             // glob on the case id
  std::vector<std::string> fields;  // globs on field paths; empty: the whole case is expected to fail
  std::string reason;
  std::string category;             // empty when not given
  std::vector<std::string> features;  // globs on the case program's features (features.h), all must match
  std::vector<std::string> errors;  // globs on error kinds: only records where either side raised one of them
  std::string expected_value = "*";  // globs on the difference's expected / actual value as text ("false",
  std::string actual_value = "*";    // "true", "absent"): a mask may accept one direction only
  std::string source;               // where it came from: a file name, or "profile NAME rule ID"
  mutable int64_t uses = 0;         // differences masked or cases explained in this run (unused_entries())
};

// {"api_difference", "implementation_bug", "not_implemented", "precision", "protocol"}
const std::vector<std::string>& expectation_categories();

// The masks that apply to one case: the entries with fields whose id matches it.
class FieldMask {
 public:
  // The first entry one of whose field globs matches `path` (and, for an entry with "errors", one of whose
  // error globs matches one of `error_kinds`, the kinds the two records raised); nullptr when none does.
  // Counts a use of the entry it returns.
  const Expectation* match(const std::string& path, const std::vector<std::string>& error_kinds = {},
                           const std::string& expected_text = "", const std::string& actual_text = "") const;
  bool empty() const { return entries_.empty(); }

 private:
  friend struct Expectations;
  std::vector<const Expectation*> entries_;  // point into the Expectations, which must outlive the mask
};

struct Expectations {
  std::vector<Expectation> entries;

  // `features`: the case program's features (features.h); entries with "features" apply only when given
  // and all their globs match.
  FieldMask mask_for(const std::string& case_id, const std::set<std::string>* features = nullptr) const;
  // The first entry without fields whose id (and features) match: the case is expected to fail.
  const Expectation* whole_case(const std::string& case_id, const std::set<std::string>* features = nullptr) const;
  // Entries that masked nothing and explained no case in this run (Expectation::uses == 0).
  std::vector<const Expectation*> unused_entries() const;
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
