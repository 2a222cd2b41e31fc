// Run reports: what a conformance run found, written as Markdown (a pull-request comment), JSON (for
// machines) and JUnit XML (for CI).
//
// A RunReport holds the run's settings (engines, seed, case count, maximum size, mode) and one CaseReport
// per case: passed, failed or known (an expected failure, a case whose only differences an expectation masked, or
// one the implementation skipped; expectations.h; known cases are shown in their own section, never dropped). A failure carries the shrunk program, the
// command line that reproduces it, and the lockstep result (first failing action, every difference of that
// action with expected/actual/errors/bound, the free-running growth table).
//
// The writers are deterministic: the same RunReport gives byte-identical output. Nothing time-dependent is
// written; durations only when ReportOptions::include_durations is set.
//
// Example:
//   RunReport report{"libtorch-1.13.1", "impl", 42, 100, 20, RunMode::Lockstep, {}};
//   report.cases.push_back(make_case_report("random-17", result, shrunk, "lockstep run --seed 42 ...", &expectations));
//   write_file_atomically("report.md", report_markdown(report));
//   write_file_atomically("report.json", report_json_text(report));
//   write_file_atomically("report.xml", report_junit(report));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/compare/expectations.h"
#include "conformance/run/lockstep_runner.h"
#include "conformance/program/program.h"

namespace lockstep {

enum class CaseStatus { Passed, Failed, Known };
const char* case_status_name(CaseStatus s);  // "passed", "failed", "known"

// An optional Program held on the heap: most of a run's cases pass and hold none, so a case costs a pointer for it,
// not a Program (issue 29: a run's memory per passing case). Reads as std::optional<Program>.
class OptionalProgram {
 public:
  OptionalProgram() = default;
  OptionalProgram(std::nullopt_t) {}
  OptionalProgram(const Program& p) : p_(std::make_unique<Program>(p)) {}
  OptionalProgram(Program&& p) : p_(std::make_unique<Program>(std::move(p))) {}
  OptionalProgram(const std::optional<Program>& p) : p_(p ? std::make_unique<Program>(*p) : nullptr) {}
  OptionalProgram(std::optional<Program>&& p) : p_(p ? std::make_unique<Program>(std::move(*p)) : nullptr) {}
  OptionalProgram(const OptionalProgram& o) : p_(o.p_ ? std::make_unique<Program>(*o.p_) : nullptr) {}
  OptionalProgram(OptionalProgram&&) noexcept = default;
  OptionalProgram& operator=(OptionalProgram o) noexcept {
    p_ = std::move(o.p_);
    return *this;
  }
  explicit operator bool() const { return p_ != nullptr; }
  bool has_value() const { return p_ != nullptr; }
  const Program& operator*() const { return *p_; }
  Program& operator*() { return *p_; }
  const Program* operator->() const { return p_.get(); }
  Program* operator->() { return p_.get(); }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<Program> p_;
};

struct CaseReport {
  std::string id;
  CaseStatus status = CaseStatus::Passed;
  std::optional<double> duration_seconds;  // written only with ReportOptions::include_durations
  OptionalProgram program;                 // the (shrunk) program of a failure; written with program_to_json
  OptionalProgram original_program;        // the generated program before shrinking
  std::string reproduce_command;           // shell command line that reproduces the failure
  LockstepResult result;
  std::string known_reason;                // Known: the matching entry's reason
  std::vector<std::string> areas;          // what the case's program exercises (feature_areas.h)
  std::optional<size_t> shrink_steps;      // a shrunk failure: the shrinker's accepted steps
};

// A fixture or named case the run's scope left out: what it would have tested counts as unsupported in the
// conformance matrix (conformance_matrix.h).
struct LeftOutCase {
  std::string id, reason;
  std::vector<std::string> areas;  // feature_areas.h
};

// What a run tested and left out (capabilities.h, feature_scope.h, api_profile.h).
struct AppliedRule {
  std::string id;      // "py-group-options-inherit", "zero-grad-default"
  std::string kind;    // "avoid" (programs not generated / fixtures left out), "expect" (differences accepted), "default"
  std::string reason;
  int64_t uses = 0;    // programs avoided, differences accepted, programs run under the rule
};

struct CoverageReport {
  nlohmann::ordered_json implementation;        // the hello (name, version, api_profile, supports, ...); null: none
  std::string profile;                          // the API profile used ("" none)
  std::vector<std::pair<std::vector<std::string>, std::string>> left_out;  // excluded feature globs, why
  std::map<std::string, int64_t> exercised;     // feature -> tested cases that used it
  std::vector<std::string> not_exercised;       // in scope, used by no tested case
  std::vector<AppliedRule> rules;
  std::vector<std::string> warnings;            // unknown names in the hello, ...
  int64_t tested = 0;                           // cases run and compared (not skipped)
  int64_t skipped = 0;                          // cases the implementation declined
  int64_t out_of_scope = 0;                     // fixtures or named cases left out by the scope
  std::vector<LeftOutCase> left_out_cases;      // their ids, why, and what they would have tested
  // Tested programs per coverage cell, "table|row|column" (conformance/program/coverage_cells.h).
  std::map<std::string, int64_t> cells;
  // Per optional trace field (optional_fields.h): observations compared and left untested.
  OptionalFieldCounts optional_fields;
};

// The coverage tables (coverage_cells.h) filled from `cells`: Markdown, one table each, "-" where a cell does
// not apply and **0** where nothing reached it; for the reports and docs/search-power.md.
std::string coverage_cells_markdown(const std::map<std::string, int64_t>& cells);
// The cells of coverage_tables() that apply and no program reached, as "table|row|column".
std::vector<std::string> empty_coverage_cells(const std::map<std::string, int64_t>& cells);

// One slice of a sharded run (`lockstep run --shard i/n`, GoogleTest's GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS;
// report_shards.h): random program k belongs to shard k % total; the named cases run in shard 0, at the head of
// its cases.
struct ReportShard {
  int64_t index = 0;
  int64_t total = 1;
  int64_t named_cases = 0;  // how many of this report's cases (the first ones) are named cases
  std::string run;          // the run's settings as a command line (its reproduce lines without --index): the
                            // shards of one run have the same
};

struct RunReport {
  std::string oracle_engine;
  std::string under_test_engine;
  uint64_t seed = 0;
  int64_t count = 0;     // cases requested
  int64_t max_size = 0;  // generator size limit
  RunMode mode = RunMode::Lockstep;
  std::vector<CaseReport> cases;
  std::optional<CoverageReport> coverage;
  std::vector<std::string> unused_expectations;  // entries that masked nothing and explained no case
  std::optional<ReportShard> shard;               // set in the report of one shard (report_shards.h)
};

struct ReportSummary {
  size_t total = 0, passed = 0, failed = 0, known = 0;
  size_t imprecise = 0;  // of the known: imprecise (SEMANTICS §9.6), known_reason starts with kImpreciseReason
};
inline constexpr const char* kImpreciseReason = "imprecise";
ReportSummary summarise(const RunReport& report);

// A case's report from its result and the expectations (expectations.h): a failure is Known when an entry without
// fields expects the whole case to fail, else Failed; a pass is Failed (an unexpected pass) when such an entry
// names it, Known when it had masked differences or was skipped, else Passed.
// `features`: program_features(*program) where the caller has them (a run computes them once per program); null:
// computed here when an expectation needs them.
CaseReport make_case_report(std::string id, LockstepResult result, std::optional<Program> program,
                            std::string reproduce_command, const Expectations* expectations = nullptr,
                            const std::set<std::string>* features = nullptr);

// A passed case as a run keeps it until its reports are written: what the writers show of a pass (id, status,
// duration, areas, actions run, free-running growth), nothing else (issue 29: memory per passing case).
void keep_only_what_a_pass_shows(CaseReport& c);

struct ReportOptions {
  bool include_durations = false;  // off: no run-to-run variation in the files
  size_t max_differences = 20;     // per case, in Markdown and JUnit (JSON holds all)
  size_t max_growth_rows = 40;     // per case, in Markdown (JSON holds all)
  size_t max_drift_cases = 50;     // passing free-running cases in Markdown's drift table
};

std::string report_markdown(const RunReport& report, const ReportOptions& options = {});
nlohmann::ordered_json report_json(const RunReport& report, const ReportOptions& options = {});
std::string report_json_text(const RunReport& report, const ReportOptions& options = {});  // 2-space indent, "\n" at end
std::string report_junit(const RunReport& report, const ReportOptions& options = {});

// Pieces shared by the writers.
// Invalid UTF-8 (and U+FFFE, U+FFFF) replaced byte by byte with U+FFFD, everything else kept: the JSON report's
// strings, which the other writers then sanitise alike.
std::string valid_utf8(const std::string& text);
// Every string value of `j` through valid_utf8() (report_json_text() does it; so do --jobs workers' files): what is
// read back writes the same Markdown and JUnit as the bytes it came from.
void make_strings_valid_utf8(nlohmann::ordered_json& j);
std::string xml_escape(const std::string& text);  // &<>"' escaped; control bytes and invalid UTF-8 -> U+FFFD
                                                  // (attribute-safe: \n \r \t as character references)
std::string xml_text(const std::string& text);
// Text from a driver made safe for a terminal and a Markdown file: invalid UTF-8 and control bytes other than
// \n and \t become U+FFFD (a driver's bytes never reach stdout or a report unescaped).
std::string printable_utf8(const std::string& text);    // element text: only & < > escaped; \n \t kept; same sanitising
// JSON indented by two spaces, except that arrays holding no object or array stay on one line
// ("shape": [2, 3]): a program stays readable in a pull-request comment.
std::string readable_json(const nlohmann::ordered_json& j);
nlohmann::ordered_json difference_to_json(const Difference& d);
nlohmann::ordered_json growth_to_json(const GrowthRow& row);
nlohmann::ordered_json coverage_to_json(const CoverageReport& coverage);
// Every optional trace field (optional_fields.h) with its counts and status: "tested" (every observation
// compared), "partly untested", or "untested" (none compared), and why observations went untested.
nlohmann::ordered_json optional_fields_to_json(const OptionalFieldCounts& counts);
const char* optional_field_status(const OptionalFieldCount& n);
std::string optional_field_why(const OptionalFieldCount& n);  // "" when nothing went untested
std::string coverage_markdown(const CoverageReport& coverage);  // the "### Coverage" section
std::string failure_location(const LockstepResult& r);  // "setup", "action 3 (step)"

}  // namespace lockstep
