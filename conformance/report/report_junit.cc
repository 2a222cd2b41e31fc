// The JUnit XML report (report.h): one <testsuite> per run, one <testcase> per case; a failure is a
// <failure> element, a known discrepancy a <skipped> element with the reason (visible in CI, not red).
#include <cmath>

#include <fmt/format.h>

#include "conformance/program/program_json.h"
#include "conformance/report/report.h"

namespace lockstep {

namespace {

std::string failure_text(const CaseReport& c, const ReportOptions& options) {
  const LockstepResult& r = c.result;
  std::string out = fmt::format("First failure at {}.\n", failure_location(r));
  if (!r.engine_failure.empty()) out += "Engine failure: " + r.engine_failure + "\n";
  for (const ClaimFailure& cf : r.claim_failures) out += "Claim check failed: " + cf.check + "\n";
  size_t rows = 0;
  for (const Difference& d : r.differences) {
    if (rows++ >= options.max_differences) {
      out += fmt::format("... and {} more differences\n", r.differences.size() - options.max_differences);
      break;
    }
    out += difference_text(d);
    if (d.kind == DifferenceKind::Numeric && d.omitted == 0 && !std::isnan(d.bound_value))
      out += fmt::format(" (rel {:.3g}, {:.3g} ulp)", d.relative_error, d.ulp_error);
    out += "\n";
  }
  if (!r.stop_reason.empty()) out += "Stopped: " + r.stop_reason + "\n";
  if (!c.reproduce_command.empty()) out += "Reproduce: " + c.reproduce_command + "\n";
  if (c.program)
    out += "Program:\n" + readable_json(program_to_json(*c.program)) + "\n";
  return out;
}

}  // namespace

std::string report_junit(const RunReport& report, const ReportOptions& options) {
  const ReportSummary s = summarise(report);
  const std::string suite = fmt::format("lockstep {} vs {}", report.under_test_engine, report.oracle_engine);
  double total_time = 0;
  for (const CaseReport& c : report.cases) total_time += c.duration_seconds.value_or(0);
  const std::string suite_time = options.include_durations ? fmt::format(" time=\"{:.3f}\"", total_time) : "";

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"lockstep\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"{}>\n",
                     s.total, s.failed, s.known, suite_time);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"{}>\n",
                     xml_escape(suite), s.total, s.failed, s.known, suite_time);
  out += "    <properties>\n";
  auto property = [&](const char* name, const std::string& value) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, xml_escape(value));
  };
  property("oracle", report.oracle_engine);
  property("under_test", report.under_test_engine);
  property("mode", run_mode_name(report.mode));
  property("seed", std::to_string(report.seed));
  property("count", std::to_string(report.count));
  property("max_size", std::to_string(report.max_size));
  if (report.shard) property("shard", fmt::format("{}/{}", report.shard->index, report.shard->total));
  // Optional trace fields (optional_fields.h) that went untested: a CI page shows them beside the counts.
  if (report.coverage)
    for (const auto& [field, n] : report.coverage->optional_fields)
      if (n.not_reported + n.not_expected > 0)
        property("untested_field", field + ": " + optional_field_why(n));
  out += "    </properties>\n";

  const std::string classname = xml_escape(fmt::format("lockstep.{}", report.under_test_engine));
  for (const CaseReport& c : report.cases) {
    const std::string time = options.include_durations && c.duration_seconds
                                 ? fmt::format(" time=\"{:.3f}\"", *c.duration_seconds)
                                 : "";
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"{}", classname, xml_escape(c.id), time);
    switch (c.status) {
      case CaseStatus::Passed:
        out += "/>\n";
        break;
      case CaseStatus::Failed: {
        const LockstepResult& r = c.result;
        const char* type = !r.differences.empty()
                               ? (has_structural_difference(r.differences) ? "structure" : "numeric")
                           : r.engine_failure.empty() && !r.claim_failures.empty() ? "claim"
                                                                                     : "engine";
        out += ">\n";
        out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", type,
                           xml_escape(r.failure_summary()), xml_text(failure_text(c, options)));
        out += "    </testcase>\n";
        break;
      }
      case CaseStatus::Known:
        out += ">\n";
        out += fmt::format("      <skipped message=\"{}\">{}</skipped>\n",
                           xml_escape("known discrepancy: " + c.known_reason),
                           xml_text(failure_text(c, options)));
        out += "    </testcase>\n";
        break;
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace lockstep
