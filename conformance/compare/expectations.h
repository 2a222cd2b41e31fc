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
//   "w → state.step", "handle g0 → value[3]", "group 0 → lr", "output → value", "error.kind"), matched part by
//   part (the parts between " → "; a glob has as many parts as the path it matches), and a first part that does
//   not start with "output", "handle " or "group " names parameters only: "* → value*" masks parameters' values,
//   never the output's ("output → value*") or a handle's ("handle * → value*").
// - "accept" (required for an entry one of whose fields names numbers: values, grads, optimizer state tensors,
//   handles, the output): what the entry accepts of a NUMERIC difference, a predicate on the pair, never "any value":
//     {"expected": "finite", "actual": "nan"}   value classes (a name or a list of names) of each side: "nan",
//                                               "inf", "+inf", "-inf", "finite", "zero", "+0", "-0", "nonzero";
//                                               both sides, and no value in a class of both (disjoint)
//     {"ulps": 64} or {"ulps": 4, "dtype": "float32"}   within that many ULPs (at most 65536; of the dtype, default the value's)
//                                               of the comparator's scale m, around the value expected at the
//                                               implementation's inputs: a precision deviation of known size
//     {"unchanged": true}                       the implementation's value is the one it had at the record before
//                                               (an update it missed)
//     {"variant": "adam.no_bias_correction"}    within the comparator's bound of what a named variant of the
//                                               specification gives at the implementation's inputs
//                                               (formula_variants.h lists them)
//   An accepted difference carries no more than the predicate allows into the error budget of what follows.
//   An entry with "accept" judges numbers only; a structural difference needs an entry without it.
// - "guard" (optional): the framework mutants (file names without ".js"/".py" in the adapter's mutants/ folder)
//   that break the masked quantity in another way and must still fail (tools/adapters/check_adapter_mutants.sh);
//   tools/adapters/check_guards.py requires one for every entry with "accept" in the shipped files.
//   An entry with fields is a MASK: a difference whose path matches one of them is accepted and recorded
//   (the report lists it, with the reason), and the comparison of the case goes on; a later difference no
//   mask matches fails the case. A case with masked differences only is reported as known (one whose masks all
//   came from an API profile, api_profile.h, passes: the profile is the API the implementation declared).
//   An entry without fields says the WHOLE CASE is expected to fail (any difference, a driver failure, an
//   exception): a failing case is reported as known (an expected failure); a passing one as an unexpected
//   pass, which is a failure (the file must say what is true). A rule (an entry with "features", for live runs)
//   says the cases it matches MAY fail: one that passes is a pass.
// - "features" (optional): globs on the features of the case's program (conformance/program/features.h),
//   all of which must match one of them: a rule for live runs, whatever the case id ("id" defaults to "*").
//   {"features": ["sgd"], "fields": ["* → state.exists"], ...} masks SGD's state entries in every SGD program.
// - "without_features" (optional): globs on features none of which the program may use: {"features": ["adam"],
//   "without_features": ["adam.betas"]} is a rule for Adam programs that leave betas at their defaults.
// - "errors" (optional, with "fields"): globs on error kinds (trace.h); the entry masks a difference only in a
//   record where the oracle or the implementation raised an error of such a kind.
// - "from" (optional): a situation of the program (record_situations()); a mask applies only in the record of the
//   first action in that situation and in every later record, so that the records before it are still judged (a
//   whole-case rule, only to programs that reach the situation): {"from": "repeated_backward", "fields": ["* → grad*"]} accepts the grads
//   of a second backward through a retained graph and what follows, not those of the first backward.
// - "expected", "actual" (optional, with "fields"): globs on the difference's values as the comparator prints
//   them ("false", "true", "absent", "0.25"): {"fields": ["* → state.exists"], "expected": "false", "actual":
//   "true"} accepts an extra state entry, never a missing one.
// - "when" (optional): {"pytorch": ">=2.0"}, a version condition (pytorch_version.h): the entry applies only to an
//   implementation of a PyTorch version that meets it (keep_for_version()), so one file is true, and every entry of
//   it used, on each version it is run with.
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
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/compare/comparator.h"
#include "conformance/program/glob.h"
#include "conformance/program/program.h"

namespace lockstep {

// "accept" (see above): what a mask entry accepts of a numeric difference.
struct Acceptance {
  bool given = false;
  std::vector<std::string> expected_classes, actual_classes;  // value classes; empty: any
  double ulps = 0;                  // > 0: within ulps ULPs of the scale, around the centre
  std::optional<DType> ulps_dtype;  // the ULP's dtype; unset: the value's
  bool unchanged = false;
  std::string variant;              // a formula variant (formula_variants.h)
};
const std::vector<std::string>& value_classes();
bool value_in_class(double v, const std::string& value_class);

// Evaluates a formula variant for one numeric difference: the value the variant gives at the implementation's
// inputs, nullopt where it cannot say (trace_comparison.cc).
using VariantEvaluator = std::function<std::optional<double>(const std::string& variant, const Difference& d)>;

// Field globs matched part by part (see "fields" above).
bool field_glob_match(const std::string& glob, const std::string& path);

struct Expectation {
  std::string id = "*";             // glob on the case id
  std::vector<std::string> fields;  // globs on field paths; empty: the whole case is expected to fail
  std::string reason;
  std::string category;             // empty when not given
  std::vector<std::string> features;  // globs on the case program's features (features.h), all must match
  std::vector<std::string> errors;  // globs on error kinds: only records where either side raised one of them
  std::vector<std::string> without_features;  // globs: the entry applies only when no program feature matches
  std::string from;                 // a record_situations() name: only records from its first action on
  std::string expected_value = "*";  // globs on the difference's expected / actual value as text ("false",
  std::string actual_value = "*";    // "true", "absent"): a mask may accept one direction only
  std::string when_pytorch;         // a version condition (">=2.0"); empty: every version
  Acceptance accept;                // required where a field glob names numbers
  std::vector<std::string> guards;  // framework mutants that guard the entry (check_guards.py)
  std::string source;               // where it came from: a file name, or "profile NAME rule ID"
  mutable int64_t uses = 0;         // differences masked or cases explained in this run (unused_entries())
};

// {"api_difference", "implementation_bug", "not_implemented", "precision", "protocol"}
const std::vector<std::string>& expectation_categories();

// Situations an entry's "from" names, each with its meaning (decided from the program alone, like features.h):
//   repeated_backward   a backward of an output that an earlier backward already backpropagated (the second
//                       backward through a retained graph, or through a freed one)
//   step_without_grad   a step while a parameter of the optimizer's groups has no grad (None): never reached by a
//                       backward, or set to None since (zero_grad(set_to_none=True), param.grad = None; zero_grad()
//                       counts as the 1.13 default, zeroing)
const std::vector<std::pair<std::string, std::string>>& record_situations();
// The index of the first action of `program` in situation `name`; nullopt when none is.
std::optional<size_t> first_action_in_situation(const Program& program, const std::string& name);

// The masks that apply to one case: the entries with fields whose id matches it.
class FieldMask {
 public:
  // The first entry one of whose field globs matches `path` (and, for an entry with "errors", one of whose
  // error globs matches one of `error_kinds`, the kinds the two records raised); nullptr when none does.
  // Counts a use of the entry it returns.
  // `record`: the action index of the record (nullopt: the setup record), for entries with "from".
  // This form judges a structural difference at `path`: entries apply by their globs; none accepts a number.
  const Expectation* match(const std::string& path, const std::vector<std::string>& error_kinds = {},
                           const std::string& expected_text = "", const std::string& actual_text = "",
                           std::optional<size_t> record = std::nullopt) const;
  // Any difference: a numeric one only by an entry whose "accept" holds for it (`variant` evaluates variants; null:
  // no variant holds).
  const Expectation* match(const Difference& d, const std::vector<std::string>& error_kinds,
                           std::optional<size_t> record, const VariantEvaluator* variant) const;
  bool empty() const { return entries_.empty(); }

 private:
  friend struct Expectations;
  std::vector<const Expectation*> entries_;  // point into the Expectations, which must outlive the mask
  std::vector<std::optional<size_t>> from_;  // per entry with "from": its first action (nullopt: none, never applies)
};

struct Expectations {
  std::vector<Expectation> entries;

  // `features`: the case program's features (features.h); entries with "features" apply only when given
  // and all their globs match. `program`: for entries with "from" (without it they do not apply).
  FieldMask mask_for(const std::string& case_id, const std::set<std::string>* features = nullptr,
                     const Program* program = nullptr) const;
  // The first entry without fields whose id (and features) match: the case is expected to fail.
  // `program` and `failed_action` (the action whose record failed): for rules with "from", which explain a case
  // only when it failed at or after the first action in their situation (without them they do not apply).
  const Expectation* whole_case(const std::string& case_id, const std::set<std::string>* features = nullptr,
                                const Program* program = nullptr,
                                std::optional<size_t> failed_action = std::nullopt) const;
  // Entries that masked nothing and explained no case in this run (Expectation::uses == 0).
  std::vector<const Expectation*> unused_entries() const;
  // The ids of entries that match none of `case_ids`.
  std::vector<std::string> stale(const std::vector<std::string>& case_ids) const;
  void append(const Expectations& more);
  // Moves the entries whose "when" does not hold for `pytorch_version` (the implementation's, "2.6.0") to
  // for_other_versions, where no match, use or unused check sees them; returns how many moved.
  size_t keep_for_version(const std::string& pytorch_version);
  std::vector<Expectation> for_other_versions;
};


// Strict readers; throw InputError (program_json.h) naming the file and the JSON pointer.
Expectations expectations_from_json(const nlohmann::ordered_json& doc, const std::string& file);
Expectations load_expectations(const std::string& path);

// An implementation's known differences from LibTorch's C++ API (its expectations file), applied where that
// implementation is the ORACLE (`lockstep run --oracle CMD --oracle-expectations FILE`, SEMANTICS 20.4): each entry's
// "when" is decided now by `oracle_version` (the oracle is the side it was written for), and its expected and actual
// sides swap (the value globs and the value classes of "accept"), as the oracle's API profile is turned around.
// Throws InputError naming the entry for one whose "accept" is "unchanged" or a "variant": those are judged at the
// implementation's inputs, which the oracle's side does not have.
Expectations turned_around(const Expectations& oracle_side, const std::string& oracle_version);

// The file shipped with the source tree for impl: conformance/compare/expectations.json.
std::string default_expectations_file();

}  // namespace lockstep
