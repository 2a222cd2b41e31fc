// `lockstep matrix`: the conformance matrix of conformance_matrix.h from run and replay reports.
#include <iostream>

#include <fmt/format.h>

#include "conformance/program/program_json.h"
#include "conformance/report/atomic_file.h"
#include "conformance/report/conformance_matrix.h"
#include "tools/commands.h"
#include "conformance/program/file_system.h"
#include <CLI/CLI.hpp>
#include "tools/cli_options.h"

namespace lockstep::tools {

int command_matrix(const MatrixArgs& args) {
  ConformanceMatrix m;
  try {
    m = read_conformance_reports(args.reports);
  } catch (const InputError& e) {
    std::cerr << "lockstep matrix: " << e.what() << "\n";
    return kExitInputError;
  }
  // Both pages are made before either is written: a report that does not read leaves the old pair in place.
  const std::string markdown = conformance_matrix_markdown(m);
  const std::string html = conformance_matrix_html(m, args.max_plots);
  try {
    files::create_directories(args.out_dir);
    write_file_atomically(args.out_dir + "/conformance-matrix.md", markdown);
    write_file_atomically(args.out_dir + "/conformance-matrix.html", html);
  } catch (const std::exception& e) {
    std::cerr << "lockstep matrix: cannot write the matrix: " << e.what() << "\n";
    return kExitInputError;
  }
  int64_t unexplained = 0;
  for (const MatrixImplementation& impl : m.implementations) {
    int64_t mine = 0;
    for (const MatrixCase& c : impl.cases) mine += c.outcome == MatrixOutcome::Failed && !c.known;
    unexplained += mine;
    fmt::print("{}: {} passed, {} failed ({} known), {} unsupported{}\n", impl.name, impl.total.passed,
               impl.total.failed, impl.total.known, impl.total.unsupported,
               mine ? fmt::format("; {} failure{} no expectation explains", mine, mine == 1 ? "" : "s") : "");
  }
  fmt::print("matrix: {0}/conformance-matrix.md, {0}/conformance-matrix.html\n", args.out_dir);
  return args.strict && unexplained > 0 ? kExitDiscrepancies : kExitOk;
}

CLI::App* add_matrix_command(CLI::App& app, MatrixArgs& args) {
  CLI::App* matrix = app.add_subcommand(
      "matrix", "The conformance matrix (implementations x feature areas: passed / failed / unsupported) from the JSON "
                "reports of run and replay, as conformance-matrix.md and a self-contained conformance-matrix.html "
                "that plots the ULP error per action of every failing case");
  matrix->add_option("reports", args.reports, "lockstep-report.json and replay-report.json files")
      ->required()
      ->check(CLI::ExistingFile);
  matrix->add_option("--out-dir", args.out_dir, "Where conformance-matrix.md and .html go")->capture_default_str();
  matrix->add_option("--max-plots", args.max_plots, "Plots per implementation in the HTML page")->capture_default_str();
  matrix->add_flag("--strict", args.strict,
                   "Exit 1 when a case failed that no expectation explains (known deviations do not count)");
  return matrix;
}

}  // namespace lockstep::tools
