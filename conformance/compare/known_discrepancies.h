// Known discrepancies: failures that are understood and accepted for now, listed in a JSON file, so that a
// run can tell them apart from new failures. A matching failure is never dropped: every report shows it
// in its own "known" section with the reason.
//
// File format: a JSON array of entries
//   [
//     {"id": "tutorial-003-*", "field": "x → grad*", "reason": "the tutorial's arithmetic is wrong (SEM-10)"},
//     {"id": "random-17", "reason": "LibTorch 1.13 ..."}          // no "field": any difference of the case
//   ]
// "id" is a case id or a glob ('*' matches any run of characters, '?' one character); "field" (optional) a
// glob on the difference's field path (comparator.h, e.g. "w → exp_avg_sq[*]"); "reason" a non-empty
// explanation; "comment" is allowed and ignored; any other field is an error.
//
// Example:
//   KnownDiscrepancies known = load_known_discrepancies("fixtures/known_discrepancies.json");
//   if (const KnownDiscrepancy* k = known.explain("random-17", {"w → grad.defined"})) ... k->reason ...
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

struct KnownDiscrepancy {
  std::string id;                    // glob on the case id
  std::optional<std::string> field;  // glob on the field path; absent: any
  std::string reason;
};

// A known-discrepancies file that cannot be used: what() is "FILE: JSON-POINTER: message"
// ("FILE: message" when the whole file is the problem).
class KnownDiscrepancyError : public std::runtime_error {
 public:
  KnownDiscrepancyError(std::string file, std::string pointer, std::string message);
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }

 private:
  std::string file_, pointer_;
};

struct KnownDiscrepancies {
  std::vector<KnownDiscrepancy> entries;

  // The entry that explains a failure of case `case_id` whose differences have the field paths `paths`:
  // every path must be matched by an entry for this id; the entry matching the first path is returned.
  // A failure without field paths (an engine exception) is explained only by an entry without "field".
  // nullptr when the failure is not (entirely) known.
  const KnownDiscrepancy* explain(const std::string& case_id, const std::vector<std::string>& paths) const;
};

// '*' matches any run of characters (also empty), '?' exactly one byte; everything else itself.
bool glob_match(const std::string& pattern, const std::string& text);

// Reads entries from a parsed document; `source` names the file in errors.
KnownDiscrepancies known_discrepancies_from_json(const nlohmann::ordered_json& doc, const std::string& source);
KnownDiscrepancies known_discrepancies_from_text(const std::string& text, const std::string& source);
KnownDiscrepancies load_known_discrepancies(const std::string& path);

// The list shipped with the source tree: conformance/compare/known_discrepancies.json.
std::string default_known_discrepancies_file();

}  // namespace lockstep
