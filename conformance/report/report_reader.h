// Reading a run report back: lockstep-report.json (report_json()) into the RunReport it was written from, so that
// the reports of the shards of one run can be merged (report_shards.h, `lockstep merge`) and written again as
// the Markdown, JSON and JUnit of the whole run.
//
// The reader is exact for what the writers use: report_json(), report_markdown() and report_junit() of the
// report read give the bytes they gave for the report written. Fields the writers compute (the summary, a
// failure's location and summary line, the coverage tables' zero cells, empty_cells, the optional fields'
// status) are accepted and recomputed, not read; any other unknown field is an error, like in every input of
// lockstep.
//
// Example:
//   RunReport r = read_report_file("shard-0/lockstep-report.json");   // throws InputError (file, pointer, why)
//   assert(report_json_text(r) == read_text_file("shard-0/lockstep-report.json"));
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "conformance/report/report.h"

namespace lockstep {

// A report is the record of a whole run (every case, free-running growth rows included: about 2 KB a case in-process,
// more through a driver), so its bounds are wider than an input's: 1 GiB and 2^26 JSON values (a shard of a few
// hundred thousand programs; docs/programs-and-limits.md "Limits"). Parsing one takes about ten times its size in memory.
inline constexpr size_t kMaxReportFileBytes = size_t{1} << 30;
inline constexpr int64_t kMaxReportValues = int64_t{1} << 26;

// Throws InputError naming `file` and the JSON pointer of the problem.
RunReport report_from_json(const nlohmann::ordered_json& doc, const std::string& file);
// Pieces, for other readers of the same objects (difference_to_json(), growth_to_json()); JsonError with the pointer.
Difference difference_from_json(const nlohmann::ordered_json& j, const std::string& pointer);
GrowthRow growth_row_from_json(const nlohmann::ordered_json& j, const std::string& pointer);

// Reads and parses the file (read_text_file()'s size bound, the JSON readers' value bounds); throws InputError.
RunReport read_report_file(const std::string& path);
// The same for a report's text; `file` names it in errors.
RunReport report_from_text(const std::string& text, const std::string& file);

}  // namespace lockstep
