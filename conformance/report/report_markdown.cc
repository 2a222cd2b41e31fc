// The Markdown report: fits a pull-request comment (report.h). A summary table, then every failure with its
// first differences, the reproduce command and the program in a collapsed <details> block, then the known
// discrepancies, then (free-running) the drift tables.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "conformance/program/coverage_cells.h"
#include "conformance/program/program_json.h"
#include "conformance/report/report.h"

namespace lockstep {

namespace {

// Text inside a table cell: pipes escaped, line breaks flattened.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

// An inline code span that survives backticks in the text (CommonMark: a longer backtick fence).
std::string code(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

// A fenced block whose fence is longer than any backtick run inside.
std::string fenced(const std::string& text, const std::string& language) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string body = text;
  if (body.empty() || body.back() != '\n') body += '\n';
  return fence + language + "\n" + body + fence + "\n";
}

std::string number(double v) {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", v);
}

void differences_table(std::string& out, const LockstepResult& r, size_t max_rows) {
  if (r.differences.empty()) return;
  // Expected: the oracle's value, and where the inputs had drifted the value expected at the implementation's own
  // inputs (the centre of the bound); the errors are the actual value's distance from that centre.
  out += "| Field | Expected | Actual | Abs. error | Rel. error | ULP error | Bound |\n";
  out += "|---|---|---|---|---|---|---|\n";
  size_t rows = 0;
  for (const Difference& d : r.differences) {
    if (rows++ >= max_rows) break;
    const std::string centre = centre_text(d);
    const std::string bound = std::isnan(d.bound_value) ? d.bound : fmt::format("≤ {:.3g} ({})", d.bound_value, d.bound);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(code(d.path)),
                       cell(centre.empty() ? d.expected_text : d.expected_text + " (" + centre + ")"),
                       cell(d.actual_text), number(d.absolute_error), number(d.relative_error),
                       number(d.ulp_error), cell(bound));
  }
  if (r.differences.size() > max_rows)
    out += fmt::format("\n…and {} more differences in this action (see the JSON report).\n",
                       r.differences.size() - max_rows);
}

std::vector<Quantity> compared_quantities(const LockstepResult& r) {
  std::vector<Quantity> out;
  for (Quantity q : all_quantities())
    for (const GrowthRow& row : r.growth)
      if (row.max_ulp_error[q] >= 0) {
        out.push_back(q);
        break;
      }
  return out;
}

void growth_table(std::string& out, const LockstepResult& r, size_t max_rows) {
  const std::vector<Quantity> quantities = compared_quantities(r);
  out += "| # | Action |";
  for (Quantity q : quantities) out += fmt::format(" {} |", quantity_name(q));
  out += "\n|---:|---|";
  for (size_t i = 0; i < quantities.size(); ++i) out += "---:|";
  out += "\n";
  size_t rows = 0;
  for (const GrowthRow& row : r.growth) {
    if (rows++ >= max_rows) break;
    out += fmt::format("| {} | {} |", row.action_index ? std::to_string(*row.action_index) : "–", row.action);
    for (Quantity q : quantities) {
      const double e = row.max_ulp_error[q];
      out += " " + (e < 0 ? std::string("–") : number(e)) + " |";
    }
    out += "\n";
  }
  if (r.growth.size() > max_rows)
    out += fmt::format("\n…{} more rows (see the JSON report).\n", r.growth.size() - max_rows);
}

void case_details(std::string& out, const CaseReport& c, const ReportOptions& options) {
  const LockstepResult& r = c.result;
  std::string heading = fmt::format("#### {} — {}", code(c.id), failure_location(r));
  if (!r.differences.empty()) heading += ": " + code(r.differences.front().path);
  out += heading + "\n\n";
  if (c.status == CaseStatus::Known) out += fmt::format("Known: {}\n\n", c.known_reason);
  for (size_t i = 0; i < r.masked.size() && i < options.max_differences; ++i) {
    const MaskedDifference& m = r.masked[i];
    out += fmt::format("- masked at {}: {}: expected {}, actual {} — {}\n",
                       m.action_index ? fmt::format("action {} ({})", *m.action_index, m.action) : std::string("setup"),
                       code(m.difference.path), code(m.difference.expected_text), code(m.difference.actual_text),
                       m.reason);
  }
  if (!r.masked.empty()) out += "\n";
  if (options.include_durations && c.duration_seconds)
    out += fmt::format("Duration: {:.3f} s\n\n", *c.duration_seconds);
  if (!r.engine_failure.empty()) out += "Engine failure:\n\n" + fenced(r.engine_failure, "text") + "\n";
  if (!r.claim_failures.empty()) {
    const ClaimFailure& first = r.claim_failures.front();
    const std::string sections = first.semantics.empty() ? "" : fmt::format(" ({})", fmt::join(first.semantics, ", "));
    out += fmt::format("Claim broken{}: {}\n\n", sections, first.claim);
    std::string checks;
    for (const ClaimFailure& cf : r.claim_failures) checks += cf.check + "\n";
    out += fenced(checks, "text") + "\n";
  }
  if (!r.driver_stderr.empty()) out += "Driver stderr:\n\n" + fenced(r.driver_stderr, "text") + "\n";
  differences_table(out, r, options.max_differences);
  if (!r.differences.empty()) out += "\n";
  if (!r.stop_reason.empty()) out += fmt::format("Stopped: {}\n\n", r.stop_reason);
  if (!c.reproduce_command.empty()) out += "Reproduce:\n\n" + fenced(c.reproduce_command, "sh") + "\n";
  if (!r.growth.empty()) {
    out += "<details><summary>Free-running drift (max ULP error per quantity)</summary>\n\n";
    growth_table(out, r, options.max_growth_rows);
    out += "\n</details>\n\n";
  }
  if (c.program) {
    out += "<details><summary>Program (JSON)</summary>\n\n";
    out += fenced(readable_json(program_to_json(*c.program)), "json");
    out += "\n</details>\n\n";
  }
}

}  // namespace

std::string coverage_markdown(const CoverageReport& c) {
  std::string out = "### Coverage\n\n";
  const auto& h = c.implementation;
  if (h.is_object()) {
    std::string who = h.value("name", std::string("?"));
    if (h.contains("version") && h["version"].is_string()) who += " " + h["version"].get<std::string>();
    out += fmt::format("Implementation: {} (hello: {})", cell(who), cell(h.contains("supports") ? "declares what it supports" : "supports everything"));
    if (h.contains("pytorch_version") && h["pytorch_version"].is_string())
      out += fmt::format("; follows PyTorch {}", cell(h["pytorch_version"].get<std::string>()));
    out += ".\n";
  } else {
    out += "Implementation: no hello (everything assumed supported).\n";
  }
  if (!c.profile.empty()) out += fmt::format("API profile: `{}`.\n", cell(c.profile));
  out += fmt::format("\n{} case{} tested, {} skipped by the implementation, {} left out by the scope.\n\n", c.tested,
                     c.tested == 1 ? "" : "s", c.skipped, c.out_of_scope);
  if (!c.rules.empty()) {
    out += "| Rule | Kind | Uses | Reason |\n|---|---|---:|---|\n";
    for (const AppliedRule& r : c.rules)
      out += fmt::format("| `{}` | {} | {} | {} |\n", cell(r.id), r.kind, r.uses, cell(r.reason));
    out += "\n";
  }
  if (!c.left_out.empty()) {
    out += "Left out (never generated, fixtures not replayed):\n\n| Features | Why |\n|---|---|\n";
    for (const auto& [when, why] : c.left_out) {
      std::string names;
      for (const std::string& w : when) names += (names.empty() ? "" : " + ") + std::string("`") + cell(w) + "`";
      out += fmt::format("| {} | {} |\n", names, cell(why));
    }
    out += "\n";
  }
  if (!c.left_out_cases.empty()) {
    out += fmt::format("<details><summary>{} case{} left out</summary>\n\n", c.left_out_cases.size(),
                       c.left_out_cases.size() == 1 ? "" : "s");
    for (const LeftOutCase& x : c.left_out_cases) out += fmt::format("- `{}`: {}\n", cell(x.id), cell(x.reason));
    out += "\n</details>\n\n";
  }
  if (!c.exercised.empty()) {
    out += "Exercised (cases per feature): ";
    bool first = true;
    for (const auto& [feature, n] : c.exercised) {
      out += fmt::format("{}`{}` {}", first ? "" : ", ", cell(feature), n);
      first = false;
    }
    out += "\n\n";
  }
  if (!c.not_exercised.empty()) {
    out += "**In scope but not exercised:** ";
    for (size_t i = 0; i < c.not_exercised.size(); ++i) out += (i ? ", `" : "`") + cell(c.not_exercised[i]) + "`";
    out += "\n\n";
  }
  // Optional trace fields (optional_fields.h): an untested one is not a failure, but a reader must see it.
  out += "| Optional trace field | Status | Observations compared | Untested | Why untested |\n|---|---|---:|---:|---|\n";
  for (const OptionalField& f : optional_fields()) {
    auto it = c.optional_fields.find(f.name);
    const OptionalFieldCount n = it == c.optional_fields.end() ? OptionalFieldCount{} : it->second;
    const std::string status = optional_field_status(n);
    out += fmt::format("| `{}` ({}) | {} | {} | {} | {} |\n", f.name, f.semantics,
                       status == "tested" ? status : "**" + status + "**", n.compared, n.not_reported + n.not_expected,
                       cell(optional_field_why(n)));
  }
  out += "\n";
  if (c.tested > 0) {
    const size_t empty = empty_coverage_cells(c.cells).size();
    out += fmt::format("<details><summary>Coverage cells: {} empty (tested programs per cell)</summary>\n\n", empty);
    out += coverage_cells_markdown(c.cells);
    out += "</details>\n\n";
  }
  return out;
}

std::string coverage_cells_markdown(const std::map<std::string, int64_t>& cells) {
  std::string out;
  for (const CoverageTable& t : coverage_tables()) {
    out += fmt::format("**{}**: {}.\n\n|  |", t.name, t.meaning);
    for (const std::string& c : t.columns) out += " " + cell(c) + " |";
    out += "\n|---|";
    for (size_t i = 0; i < t.columns.size(); ++i) out += "---:|";
    out += "\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out += "| " + cell(t.rows[r]) + " |";
      for (size_t col = 0; col < t.columns.size(); ++col) {
        if (!t.applies[r][col]) {
          out += " - |";
          continue;
        }
        auto it = cells.find(coverage_cell_key(t.name, t.rows[r], t.columns[col]));
        out += it == cells.end() ? " **0** |" : fmt::format(" {} |", it->second);
      }
      out += "\n";
    }
    out += "\n";
  }
  return out;
}

std::string report_markdown(const RunReport& report, const ReportOptions& options) {
  const ReportSummary s = summarise(report);
  std::string out;
  out += fmt::format("## lockstep: {} vs {}\n\n", cell(report.under_test_engine), cell(report.oracle_engine));
  size_t skipped = 0;  // skipped (answered unsupported) and known discrepancies are both "known" in the JSON
  for (const CaseReport& c : report.cases) skipped += c.status == CaseStatus::Known && !c.result.skipped.empty();
  out += s.failed > 0          ? fmt::format("**{} case{} failed.**\n\n", s.failed, s.failed == 1 ? "" : "s")
         : s.known > skipped   ? "**No new failures** (known discrepancies below).\n\n"
         : skipped > 0         ? fmt::format("**No failures**, {} case{} skipped (below).\n\n", skipped, skipped == 1 ? "" : "s")
                               : "**All cases passed.**\n\n";
  out += "| Setting | Value |\n|---|---|\n";
  out += fmt::format("| Engine under test | {} |\n", cell(code(report.under_test_engine)));
  out += fmt::format("| Oracle | {} |\n", cell(code(report.oracle_engine)));
  out += fmt::format("| Mode | {} |\n", run_mode_name(report.mode));
  if (report.max_size > 0) {  // a run's random programs (a replay has none)
    out += fmt::format("| Seed | {} |\n", report.seed);
    out += fmt::format("| Count | {} |\n", report.count);
    out += fmt::format("| Max size | {} |\n", report.max_size);
  }
  if (report.shard)
    out += fmt::format("| Shard | {} of {} (random programs k with k % {} == {}) |\n", report.shard->index,
                       report.shard->total, report.shard->total, report.shard->index);
  out += "\n";
  out += "| Result | Cases |\n|---|---:|\n";
  out += fmt::format("| Passed | {} |\n| Failed | {} |\n| Known discrepancies | {} |\n| Skipped | {} |\n| Total | {} |\n\n",
                     s.passed, s.failed, s.known - skipped, skipped, s.total);
  if (report.coverage)
    for (const std::string& w : report.coverage->warnings) out += "**Warning:** " + cell(w) + "\n\n";

  // What a reader came for first: the failures, then the known discrepancies; coverage last.
  if (s.failed > 0) {
    out += "### Failures\n\n";
    for (const CaseReport& c : report.cases)
      if (c.status == CaseStatus::Failed) case_details(out, c, options);
  }
  if (s.known > skipped) {
    out += "### Known discrepancies\n\n";
    for (const CaseReport& c : report.cases)
      if (c.status == CaseStatus::Known && c.result.skipped.empty()) case_details(out, c, options);
  }
  if (skipped > 0) {
    out += fmt::format("### Skipped\n\n<details><summary>{} case{} the implementation answered unsupported</summary>\n\n",
                       skipped, skipped == 1 ? "" : "s");
    for (const CaseReport& c : report.cases)
      if (c.status == CaseStatus::Known && !c.result.skipped.empty())
        out += fmt::format("- {}: {}\n", code(c.id), cell(c.result.skipped));
    out += "\n</details>\n\n";
  }
  if (!report.unused_expectations.empty()) {
    out += "### Unused expectations\n\nThese entries masked nothing and explained no case in this run:\n\n";
    for (const std::string& u : report.unused_expectations) out += "- " + cell(u) + "\n";
    out += "\n";
  }
  // Free-running: the drift of the passing cases too, one row per case (largest error over the run).
  bool any_growth = false;
  for (const CaseReport& c : report.cases)
    if (c.status == CaseStatus::Passed && !c.result.growth.empty()) any_growth = true;
  if (any_growth) {
    out += "### Drift of passing cases (largest ULP error over the run)\n\n";
    out += "| Case | Actions |";
    for (Quantity q : all_quantities()) out += fmt::format(" {} |", quantity_name(q));
    out += "\n|---|---:|";
    for (size_t i = 0; i < all_quantities().size(); ++i) out += "---:|";
    out += "\n";
    size_t rows = 0, omitted = 0;
    for (const CaseReport& c : report.cases) {
      if (c.status != CaseStatus::Passed || c.result.growth.empty()) continue;
      if (rows++ >= options.max_drift_cases) {
        ++omitted;
        continue;
      }
      out += fmt::format("| {} | {} |", cell(code(c.id)), c.result.actions_run);
      for (Quantity q : all_quantities()) {
        double worst = -1;
        for (const GrowthRow& row : c.result.growth) worst = std::max(worst, row.max_ulp_error[q]);
        out += " " + (worst < 0 ? std::string("–") : number(worst)) + " |";
      }
      out += "\n";
    }
    if (omitted > 0) out += fmt::format("\n…and {} more cases (see the JSON report).\n", omitted);
    out += "\n";
  }
  if (report.coverage) out += coverage_markdown(*report.coverage);
  return printable_utf8(out);  // a driver's bytes (stderr, messages) sanitised as a whole
}

}  // namespace lockstep
