// Helpers shared by the subcommands that write reports and print reproduce lines.
#pragma once

#include <cstddef>
#include <string>

#include "conformance/report/report.h"

namespace lockstep::tools {

// A string quoted for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string& s);

// The scope flags of a reproduce line: " --features 'a,b' --exclude-features ... --profile ..." (each only when
// given), so that the line runs the case in the scope that found it.
std::string scope_reproduce_flags(const std::string& features, const std::string& exclude_features,
                                  const std::string& profile);

// The folder a reproduce line writes its reports to, as flags: " --report-dir 'lockstep-repro/ID'" (the id with
// every byte outside [A-Za-z0-9._-] as '_'), so that reproducing a case does not overwrite the reports of the run
// that printed it (./lockstep-report.*). A later --report-dir on the line overrides it.
std::string reproduce_report_dir_flag(const std::string& case_id);

// What a run or replay did not test, as one console line (the report lists every case with why): "skipped 92 (the
// implementation answered unsupported: 'autograd' 50, ...), left out 3 (outside the scope)"; "" when nothing was.
// Skipped: sent and declined; left out: never sent (the hello's supports, --features, the profile).
std::string untested_line(const RunReport& report);

// When more than half of `total` cases of a kind ("random programs", "fixtures") were skipped by the implementation:
// the warning that says so and how to declare what it supports or narrow the run; "" otherwise.
std::string mostly_skipped_warning(size_t skipped, size_t total, const std::string& what);

// A path for a reproduce line: absolute (files::canonical) when it exists, so the line runs from any directory; as
// given otherwise.
std::string path_for_reproduce(const std::string& path);

// A whole run's (not a shard's: `lockstep merge` adds it to the merged report, so the bytes are one run's) warning
// when more than half of its random programs (ids random-N) were skipped: printed, and added to the report's
// coverage warnings.
void warn_if_mostly_skipped(RunReport& report);

// Writes DIR/STEM.md, .json and .xml atomically (nothing when dir is empty) and prints where they went.
void write_reports(const std::string& dir, const RunReport& report, const std::string& stem);

}  // namespace lockstep::tools
