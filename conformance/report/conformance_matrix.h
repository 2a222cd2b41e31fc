// The conformance matrix: implementations x feature areas (feature_areas.h), with how many cases passed,
// failed and were unsupported in each, built from the JSON reports of `lockstep run` and `lockstep replay`
// (report.h, format "lockstep-report/1"). Written as Markdown (a table and the failing cases) and as one
// self-contained HTML page that also plots, for each failing case, the largest ULP error of each action
// (the report's per-record growth rows): the drift a reader would rather see than read.
//
// Counting, per implementation (the hello's name and version, else the engine's name; several reports of
// one implementation add up, a case id found in more than one of them counting once, with its worse outcome),
// per area a case's program exercises:
//   passed       the case passed (differences an API profile accepts included: that is the declared API)
//   failed       the case failed, or failed as an expectation says (a known deviation: counted as failed and
//                also as known, because the matrix says where an implementation is not PyTorch's, not
//                whether its expectations file is up to date)
//   unsupported  the implementation answered "unsupported", or the run's scope left the case out
//
// Example:
//   ConformanceMatrix m = read_conformance_reports({"out/tfjs/replay-report.json", "out/tfjs/lockstep-report.json"});
//   write_file_atomically("matrix.md", conformance_matrix_markdown(m));
//   write_file_atomically("matrix.html", conformance_matrix_html(m));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

enum class MatrixOutcome { Passed, Failed, Unsupported };

// The largest ULP error of one record (every quantity), for the plot; +inf for a NaN/infinite error.
struct UlpPoint {
  std::string label;  // "init", "0 forward", "3 step"
  double ulps = 0;
};

struct MatrixCase {
  std::string id;
  std::string report;  // the file it came from
  MatrixOutcome outcome = MatrixOutcome::Passed;
  bool known = false;  // failed as an expectation says
  std::vector<std::string> areas;
  std::string summary;  // failed: the report's one-line failure summary; known/unsupported: the reason
  std::vector<UlpPoint> ulps;             // failed: per record, up to the first failing one
  std::optional<size_t> failing_point;    // index into ulps of the first failing record
  double allowed_ulps = 0;                // the bound at the first numeric difference (0: none)
};

struct AreaCounts {
  int64_t passed = 0, failed = 0, known = 0, unsupported = 0;
};

struct MatrixImplementation {
  std::string name;                       // "tfjs 4.22.0"
  std::vector<std::string> reports;       // the files read for it
  // What the driver's adapter emulates where the framework has no counterpart (the hello's optional "emulated"
  // strings, PROTOCOL.md section 2a): cases of those features test the adapter, not the framework.
  std::vector<std::string> emulated;
  // Optional trace fields (optional_fields.h) its reports count as not reported: untested for it.
  std::vector<std::string> untested_fields;
  std::vector<MatrixCase> cases;
  std::map<std::string, AreaCounts> by_area;  // area -> counts
  AreaCounts total;                       // every case once
};

struct ConformanceMatrix {
  std::vector<MatrixImplementation> implementations;  // in the order first named by the reports
};

// Reads the reports (paths of lockstep-report.json / replay-report.json files). Throws InputError naming the
// file and the JSON pointer of what does not read (a file that is not a lockstep report, a field of the wrong
// type); unknown fields are allowed (the report format grows).
ConformanceMatrix read_conformance_reports(const std::vector<std::string>& paths);

std::string conformance_matrix_markdown(const ConformanceMatrix& m);
// One HTML page, no external resources (inline CSS and SVG); at most `max_plots` plots per implementation.
std::string conformance_matrix_html(const ConformanceMatrix& m, size_t max_plots = 100);

}  // namespace lockstep
