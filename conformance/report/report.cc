// Run reports: the model, the summary, known-discrepancy classification and the JSON writer (report.h).
#include "conformance/report/report.h"

#include <set>

#include <fmt/format.h>

#include "conformance/program/coverage_cells.h"
#include "conformance/program/features.h"
#include "conformance/program/json_number.h"
#include "conformance/program/program_json.h"

namespace lockstep {

const char* case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::Passed: return "passed";
    case CaseStatus::Failed: return "failed";
    case CaseStatus::Known: return "known";
  }
  return "?";
}

ReportSummary summarise(const RunReport& report) {
  ReportSummary s;
  for (const CaseReport& c : report.cases) {
    ++s.total;
    switch (c.status) {
      case CaseStatus::Passed: ++s.passed; break;
      case CaseStatus::Failed: ++s.failed; break;
      case CaseStatus::Known:
        ++s.known;
        if (c.known_reason.rfind(kImpreciseReason, 0) == 0) ++s.imprecise;
        break;
    }
  }
  return s;
}

void keep_only_what_a_pass_shows(CaseReport& c) {
  if (c.status != CaseStatus::Passed) return;
  LockstepResult kept;
  kept.mode = c.result.mode;
  kept.passed = c.result.passed;
  kept.actions_run = c.result.actions_run;
  kept.growth = std::move(c.result.growth);
  kept.growth.shrink_to_fit();
  c.result = std::move(kept);
  c.program.reset();
  c.original_program.reset();
  c.reproduce_command = std::string();
  c.known_reason = std::string();
  c.areas.shrink_to_fit();
}

CaseReport make_case_report(std::string id, LockstepResult result, std::optional<Program> program,
                            std::string reproduce_command, const Expectations* expectations,
                            const std::set<std::string>* known_features) {
  CaseReport c;
  c.id = std::move(id);
  c.program = std::move(program);
  c.reproduce_command = std::move(reproduce_command);
  c.status = result.passed ? CaseStatus::Passed : CaseStatus::Failed;
  std::set<std::string> computed;  // for rule entries (expectations.h, "features")
  const std::set<std::string>* features = known_features;
  if (c.program && expectations && !features) features = &(computed = program_features(*c.program));
  const Expectation* whole =
      expectations ? expectations->whole_case(c.id, c.program ? features : nullptr, c.program ? &*c.program : nullptr,
                                              result.failed_action)
                   : nullptr;
  if (whole && !result.passed) ++whole->uses;
  auto labelled = [](const Expectation& e) {
    return e.category.empty() ? e.reason : fmt::format("{}: {}", e.category, e.reason);
  };
  // A case that passed only because masks accepted its differences still deviates: an entry that says it
  // fails is not contradicted (its claim checks, say, fail in a live run while replay masks the same fields).
  const bool masked_by_expectations = std::any_of(result.masked.begin(), result.masked.end(),
                                                  [](const MaskedDifference& m) { return !m.by_profile; });
  if ((!result.passed || masked_by_expectations) && whole) {
    if (result.passed) ++whole->uses;
    c.status = CaseStatus::Known;
    c.known_reason = "expected failure (" + labelled(*whole) + ")";
  } else if (result.passed && whole && result.skipped.empty() && whole->features.empty()) {
    // (A rule, an entry with "features", says its cases MAY fail: a pass is a pass.)
    c.status = CaseStatus::Failed;
    result.passed = false;
    result.engine_failure = "passed, but an expectation says the whole case fails (" + labelled(*whole) +
                            "): remove or narrow the entry";
  } else if (result.passed && !result.skipped.empty()) {
    c.status = CaseStatus::Known;
    c.known_reason = "skipped: " + result.skipped;
  } else if (result.passed && !result.masked.empty() &&
             std::any_of(result.masked.begin(), result.masked.end(), [](const MaskedDifference& m) { return !m.by_profile; })) {
    c.status = CaseStatus::Known;
    c.known_reason = fmt::format("{} masked difference{} ({})", result.masked.size(),
                                 result.masked.size() == 1 ? "" : "s", result.masked.front().reason);
  }
  // SEMANTICS §9.6: a pass whose bound could not tell some value from its negation is not a pass.
  if (c.status == CaseStatus::Passed && result.imprecision.values > 0) {
    c.status = CaseStatus::Known;
    c.known_reason = fmt::format("{} {}: {} tensor{} whose every value has a bound at least its magnitude (SEMANTICS "
                                 "§9.6; first: {})", kImpreciseReason, "(not passed)", result.imprecision.values,
                                 result.imprecision.values == 1 ? "" : "s", result.imprecision.first);
  }
  c.result = std::move(result);
  return c;
}

std::string failure_location(const LockstepResult& r) {
  if (r.failed_at_setup) return "setup";
  if (r.failed_action) return fmt::format("action {} ({})", *r.failed_action, r.failed_action_name);
  return "run";
}

namespace {

// `escape`: XML (entities); else only the sanitising: invalid UTF-8 and control bytes but \n and \t -> U+FFFD.
// The length of the valid UTF-8 sequence at s[i] (a lead byte >= 0x80), 0 when it is not one: no overlongs,
// surrogates, > U+10FFFF, U+FFFE/U+FFFF (not allowed in XML).
size_t utf8_sequence_length(const unsigned char* s, size_t i, size_t n) {
  const unsigned char c = s[i];
  size_t length = 0;
  uint32_t code = 0;
  if (c >= 0xC2 && c <= 0xDF) { length = 2; code = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { length = 3; code = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { length = 4; code = c & 0x07; }
  if (length == 0 || i + length > n) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
    code = (code << 6) | (s[i + k] & 0x3F);
  }
  const uint32_t min_code = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF) || code == 0xFFFE || code == 0xFFFF)
    return 0;
  return length;
}

std::string sanitise(const std::string& text, bool attribute, bool escape = true) {
  static const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80 && !escape) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) out += kReplacement;  // no terminal control sequences
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += attribute ? "&quot;" : "\""; break;
        case '\'': out += attribute ? "&apos;" : "'"; break;
        case '\n': out += attribute ? "&#10;" : "\n"; break;  // kept through attribute normalisation
        case '\r': out += "&#13;"; break;
        case '\t': out += attribute ? "&#9;" : "\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) out += kReplacement;  // not allowed in XML 1.0
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence, validated; each byte of an invalid one becomes U+FFFD.
    const size_t length = utf8_sequence_length(s, i, n);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text, i, length);
    i += length;
  }
  return out;
}

void readable_json_into(const nlohmann::ordered_json& j, int indent, std::string& out) {
  auto dump = [](const nlohmann::ordered_json& v) {
    return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  };
  const std::string pad(static_cast<size_t>(indent) + 2, ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + dump(nlohmann::ordered_json(it.key())) + ": ";
      readable_json_into(it.value(), indent + 2, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<size_t>(indent), ' ') + "}";
  } else if (j.is_array() && !j.empty()) {
    bool flat = true;
    for (const auto& v : j)
      if (v.is_structured()) flat = false;
    if (flat) {
      out += "[";
      for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + dump(j[i]);
      out += "]";
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad;
      readable_json_into(j[i], indent + 2, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<size_t>(indent), ' ') + "]";
  } else {
    out += dump(j);
  }
}

}  // namespace

std::string valid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n;) {
    const size_t length = s[i] < 0x80 ? 1 : utf8_sequence_length(s, i, n);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

std::string xml_escape(const std::string& text) { return sanitise(text, true); }
std::string xml_text(const std::string& text) { return sanitise(text, false); }
std::string printable_utf8(const std::string& text) { return sanitise(text, false, false); }

std::string readable_json(const nlohmann::ordered_json& j) {
  std::string out;
  readable_json_into(j, 0, out);
  return out;
}

namespace {

nlohmann::ordered_json optional_number(double v) { return number_to_json(v); }

}  // namespace

nlohmann::ordered_json growth_to_json(const GrowthRow& row) {
  nlohmann::ordered_json j;
  j["action_index"] = row.action_index ? nlohmann::ordered_json(*row.action_index) : nlohmann::ordered_json();
  j["action"] = row.action;
  nlohmann::ordered_json errors = nlohmann::ordered_json::object();
  for (Quantity q : all_quantities())
    if (row.max_ulp_error[q] >= 0) errors[quantity_name(q)] = number_to_json(row.max_ulp_error[q]);
  j["max_ulp_error"] = std::move(errors);
  return j;
}

nlohmann::ordered_json difference_to_json(const Difference& d) {
  nlohmann::ordered_json j;
  j["kind"] = d.kind == DifferenceKind::Structure ? "structure" : "numeric";
  j["path"] = d.path;
  if (d.quantity) j["quantity"] = quantity_name(*d.quantity);
  j["expected_text"] = d.expected_text;
  j["actual_text"] = d.actual_text;
  if (d.omitted > 0) j["omitted"] = d.omitted;
  if (d.kind == DifferenceKind::Numeric && d.omitted == 0) {
    j["expected"] = optional_number(d.expected);
    j["actual"] = optional_number(d.actual);
    j["absolute_error"] = optional_number(d.absolute_error);
    j["relative_error"] = optional_number(d.relative_error);
    j["ulp_error"] = optional_number(d.ulp_error);
    j["scale"] = optional_number(d.scale);
    j["allowed_ulps"] = optional_number(d.allowed_ulps);
    if (!std::isnan(d.bound_value)) {
      j["bound_value"] = optional_number(d.bound_value);
      j["centre"] = optional_number(d.centre);
      j["carried"] = optional_number(d.carried);
    }
  }
  j["bound"] = d.bound;
  return j;
}

const char* optional_field_status(const OptionalFieldCount& n) {
  const int64_t untested = n.not_reported + n.not_expected;
  if (n.compared == 0) return "untested";
  return untested == 0 ? "tested" : "partly untested";
}

std::string optional_field_why(const OptionalFieldCount& n) {
  std::string why;
  if (n.not_reported > 0) why = "the implementation does not report it (its hello does not announce it)";
  if (n.not_expected > 0)
    why += std::string(why.empty() ? "" : "; ") + "the expected traces do not record it (fixtures recorded before it)";
  return why;
}

nlohmann::ordered_json optional_fields_to_json(const OptionalFieldCounts& counts) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const OptionalField& f : optional_fields()) {  // every field, counted or not
    auto it = counts.find(f.name);
    const OptionalFieldCount n = it == counts.end() ? OptionalFieldCount{} : it->second;
    nlohmann::ordered_json j;
    j["status"] = optional_field_status(n);
    j["compared"] = n.compared;
    j["not_reported"] = n.not_reported;
    j["not_expected"] = n.not_expected;
    j["semantics"] = f.semantics;
    if (const std::string why = optional_field_why(n); !why.empty()) j["why_untested"] = why;
    out[f.name] = std::move(j);
  }
  return out;
}

nlohmann::ordered_json coverage_to_json(const CoverageReport& c) {
  nlohmann::ordered_json j;
  j["implementation"] = c.implementation;
  j["profile"] = c.profile;
  j["tested"] = c.tested;
  j["skipped"] = c.skipped;
  j["out_of_scope"] = c.out_of_scope;
  nlohmann::ordered_json left_cases = nlohmann::ordered_json::array();
  for (const LeftOutCase& x : c.left_out_cases)
    left_cases.push_back({{"id", x.id}, {"reason", x.reason}, {"areas", x.areas}});
  j["left_out_cases"] = std::move(left_cases);
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const AppliedRule& r : c.rules)
    rules.push_back({{"id", r.id}, {"kind", r.kind}, {"uses", r.uses}, {"reason", r.reason}});
  j["rules"] = std::move(rules);
  nlohmann::ordered_json left = nlohmann::ordered_json::array();
  for (const auto& [when, why] : c.left_out) left.push_back({{"features", when}, {"reason", why}});
  j["left_out"] = std::move(left);
  nlohmann::ordered_json exercised = nlohmann::ordered_json::object();
  for (const auto& [feature, n] : c.exercised) exercised[feature] = n;
  j["exercised"] = std::move(exercised);
  j["not_exercised"] = c.not_exercised;
  // The coverage tables: every cell that applies, with the number of tested programs that reached it.
  nlohmann::ordered_json tables = nlohmann::ordered_json::object();
  for (const CoverageTable& t : coverage_tables()) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::object();
    for (size_t r = 0; r < t.rows.size(); ++r) {
      nlohmann::ordered_json row = nlohmann::ordered_json::object();
      for (size_t col = 0; col < t.columns.size(); ++col) {
        if (!t.applies[r][col]) continue;
        auto it = c.cells.find(coverage_cell_key(t.name, t.rows[r], t.columns[col]));
        row[t.columns[col]] = it == c.cells.end() ? 0 : it->second;
      }
      rows[t.rows[r]] = std::move(row);
    }
    tables[t.name] = {{"meaning", t.meaning}, {"rows", std::move(rows)}};
  }
  j["cells"] = std::move(tables);
  j["empty_cells"] = empty_coverage_cells(c.cells);
  j["optional_fields"] = optional_fields_to_json(c.optional_fields);
  if (!c.warnings.empty()) j["warnings"] = c.warnings;
  return j;
}

std::vector<std::string> empty_coverage_cells(const std::map<std::string, int64_t>& cells) {
  std::vector<std::string> empty;
  for (const CoverageTable& t : coverage_tables())
    for (size_t r = 0; r < t.rows.size(); ++r)
      for (size_t col = 0; col < t.columns.size(); ++col) {
        const std::string key = coverage_cell_key(t.name, t.rows[r], t.columns[col]);
        if (t.applies[r][col] && !cells.count(key)) empty.push_back(key);
      }
  return empty;
}

nlohmann::ordered_json report_json(const RunReport& report, const ReportOptions& options) {
  nlohmann::ordered_json j;
  j["format"] = "lockstep-report/1";
  j["oracle"] = report.oracle_engine;
  j["under_test"] = report.under_test_engine;
  j["mode"] = run_mode_name(report.mode);
  j["seed"] = report.seed;
  j["count"] = report.count;
  j["max_size"] = report.max_size;
  if (report.shard)
    j["shard"] = {{"index", report.shard->index}, {"total", report.shard->total},
                  {"named_cases", report.shard->named_cases}, {"run", report.shard->run}};
  const ReportSummary s = summarise(report);
  j["summary"] = {{"total", s.total}, {"passed", s.passed}, {"failed", s.failed}, {"known", s.known}};
  if (report.coverage) j["coverage"] = coverage_to_json(*report.coverage);
  if (!report.unused_expectations.empty()) j["unused_expectations"] = report.unused_expectations;
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const CaseReport& c : report.cases) {
    nlohmann::ordered_json cj;
    cj["id"] = c.id;
    cj["status"] = case_status_name(c.status);
    cj["areas"] = c.areas;
    if (options.include_durations && c.duration_seconds) cj["duration_seconds"] = number_to_json(*c.duration_seconds);
    if (c.status == CaseStatus::Known) cj["known_reason"] = c.known_reason;
    if (!c.result.skipped.empty()) cj["skipped"] = c.result.skipped;
    if (!c.result.masked.empty()) {
      nlohmann::ordered_json masked = nlohmann::ordered_json::array();
      for (const MaskedDifference& m : c.result.masked) {
        nlohmann::ordered_json mj = difference_to_json(m.difference);
        mj["action_index"] = m.action_index ? nlohmann::ordered_json(*m.action_index) : nlohmann::ordered_json();
        mj["action"] = m.action;
        mj["reason"] = m.reason;
        masked.push_back(std::move(mj));
      }
      cj["masked"] = std::move(masked);
    }
    const LockstepResult& r = c.result;
    cj["actions_run"] = r.actions_run;
    if (!r.passed) {
      nlohmann::ordered_json f;
      f["at"] = r.failed_at_setup ? "setup" : "action";
      f["action_index"] = r.failed_action ? nlohmann::ordered_json(*r.failed_action) : nlohmann::ordered_json();
      f["action"] = r.failed_action_name;
      f["location"] = failure_location(r);
      f["summary"] = r.failure_summary();
      if (!r.engine_failure.empty()) f["engine_failure"] = r.engine_failure;
      if (!r.claim_failures.empty()) {
        nlohmann::ordered_json claims = nlohmann::ordered_json::array();
        for (const ClaimFailure& cf : r.claim_failures)
          claims.push_back({{"check", cf.check}, {"claim", cf.claim}, {"semantics", cf.semantics}});
        f["claim_failures"] = std::move(claims);
      }
      if (!r.stop_reason.empty()) f["stop_reason"] = r.stop_reason;
      if (!r.driver_stderr.empty()) f["driver_stderr"] = r.driver_stderr;
      nlohmann::ordered_json diffs = nlohmann::ordered_json::array();
      for (const Difference& d : r.differences) diffs.push_back(difference_to_json(d));
      f["differences"] = std::move(diffs);
      f["reproduce"] = c.reproduce_command;
      if (c.program) f["program"] = program_to_json(*c.program);
      if (c.original_program) f["original_program"] = program_to_json(*c.original_program);
      if (c.shrink_steps) f["shrink_steps"] = *c.shrink_steps;
      cj["failure"] = std::move(f);
    }
    if (r.passed && c.status != CaseStatus::Passed) {
      // A known case that passed (masked or skipped), or an unexpected pass: what the Markdown shows of it
      // (report_reader.h reads the report back, e.g. to merge shards).
      if (!r.engine_failure.empty()) cj["engine_failure"] = r.engine_failure;
      if (!r.stop_reason.empty()) cj["stop_reason"] = r.stop_reason;
      if (!r.driver_stderr.empty()) cj["driver_stderr"] = r.driver_stderr;
      if (!c.reproduce_command.empty()) cj["reproduce"] = c.reproduce_command;
      if (c.program) cj["program"] = program_to_json(*c.program);
      if (c.original_program) cj["original_program"] = program_to_json(*c.original_program);
    }
    if (!r.growth.empty()) {
      nlohmann::ordered_json g = nlohmann::ordered_json::array();
      for (const GrowthRow& row : r.growth) g.push_back(growth_to_json(row));
      cj["growth"] = std::move(g);
    }
    cases.push_back(std::move(cj));
  }
  j["cases"] = std::move(cases);
  return j;
}

void make_strings_valid_utf8(nlohmann::ordered_json& j) {
  if (j.is_string()) {
    std::string& s = j.get_ref<std::string&>();
    std::string v = valid_utf8(s);
    if (v != s) s = std::move(v);
  } else if (j.is_structured()) {
    for (auto& child : j) make_strings_valid_utf8(child);
  }
}

std::string report_json_text(const RunReport& report, const ReportOptions& options) {
  nlohmann::ordered_json j = report_json(report, options);
  make_strings_valid_utf8(j);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace lockstep
