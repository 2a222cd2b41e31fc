// `lockstep merge`: the reports of the shards of one run (`lockstep run --shard i/n`, or GoogleTest's
// GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS in n CI jobs) as the reports of the whole run (report_shards.h): the same
// Markdown, JSON and JUnit bytes one unsharded run writes.
#include <iostream>

#include <fmt/format.h>

#include "conformance/report/report_reader.h"
#include "conformance/report/report_shards.h"
#include "tools/commands.h"
#include "tools/report_files.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

int command_merge(const MergeArgs& args) {
  RunReport merged;
  try {
    std::vector<std::pair<std::string, RunReport>> reports;
    for (const std::string& file : args.reports) reports.emplace_back(file, read_report_file(file));
    merged = merge_shard_reports(std::move(reports), std::nullopt);
  } catch (const std::exception& e) {
    std::cerr << "lockstep merge: " << e.what() << "\n";
    return kExitInputError;
  }
  warn_if_mostly_skipped(merged);  // a whole run's warning, which no shard's report holds
  try {
    write_reports(args.report_dir, merged, "lockstep-report");
  } catch (const std::exception& e) {
    std::cerr << "lockstep merge: cannot write the reports: " << e.what() << "\n";
    return kExitInputError;
  }
  const ReportSummary s = summarise(merged);
  fmt::print("{} shards merged: {} cases, {} passed, {} failed, {} known (seed {}, count {})\n", args.reports.size(),
             s.total, s.passed, s.failed, s.known, merged.seed, merged.count);
  return s.failed ? kExitDiscrepancies : kExitOk;
}

CLI::App* add_merge_command(CLI::App& app, MergeArgs& args) {
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge the lockstep-report.json of every shard of one run (run --shard) into the reports of the "
               "whole run; exit 1 when the run failed");
  merge->add_option("reports", args.reports, "lockstep-report.json of each shard")->required()->check(CLI::ExistingFile);
  add_report_dir_option(merge, args.report_dir, "Where the merged Markdown, JSON and JUnit reports go");
  return merge;
}

}  // namespace lockstep::tools
