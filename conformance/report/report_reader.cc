// Reading lockstep-report.json back into a RunReport (report_reader.h). Mirrors report_json() in report.cc field
// by field; keep the two in step (report_reader_test.cc writes, reads and writes again every kind of case).
#include "conformance/report/report_reader.h"

#include <fmt/format.h>

#include "conformance/program/coverage_cells.h"
#include "conformance/program/json_number.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"

namespace lockstep {

namespace {

using json = nlohmann::ordered_json;

// Reports nest a program inside a case inside the report; programs nest expressions (ProgramLimits).
constexpr int kReportDepth = 512;

int64_t count_from_json(const json& j, const std::string& pointer) { return index_from_json(j, pointer); }

std::optional<size_t> optional_index(const json& j, const std::string& pointer) {
  if (j.is_null()) return std::nullopt;
  return static_cast<size_t>(index_from_json(j, pointer));
}

Program program_at(const json& j, const std::string& pointer) {
  try {
    return program_from_json(j);
  } catch (const ProgramError& e) {
    throw JsonError(pointer + e.path(), e.what());
  }
}

Quantity quantity_at(const json& j, const std::string& pointer) {
  const std::string name = string_from_json(j, pointer);
  const std::optional<Quantity> q = quantity_from_name(name);
  if (!q) throw JsonError(pointer, "unknown quantity '" + name + "'");
  return *q;
}

// difference_to_json(); `reader` may hold further fields its caller reads (a masked difference's).
Difference difference_from(JsonObjectReader& r) {
  Difference d;
  const std::string kind = r.string("kind");
  if (kind == "structure") d.kind = DifferenceKind::Structure;
  else if (kind == "numeric") d.kind = DifferenceKind::Numeric;
  else throw JsonError(r.pointer("kind"), "expected \"structure\" or \"numeric\", got \"" + kind + "\"");
  d.path = r.string("path");
  if (const json* q = r.optional("quantity")) d.quantity = quantity_at(*q, r.pointer("quantity"));
  d.expected_text = r.string("expected_text");
  d.actual_text = r.string("actual_text");
  if (const json* o = r.optional("omitted")) d.omitted = static_cast<size_t>(count_from_json(*o, r.pointer("omitted")));
  if (d.kind == DifferenceKind::Numeric && d.omitted == 0) {
    auto number = [&](const char* key) { return number_from_json(r.required(key), r.pointer(key)); };
    d.expected = number("expected");
    d.actual = number("actual");
    d.absolute_error = number("absolute_error");
    d.relative_error = number("relative_error");
    d.ulp_error = number("ulp_error");
    d.scale = number("scale");
    d.allowed_ulps = number("allowed_ulps");
    if (r.optional("bound_value")) {
      d.bound_value = number("bound_value");
      d.centre = number("centre");
      d.carried = number("carried");
    }
  }
  d.bound = r.string("bound");
  return d;
}

GrowthRow growth_from(const json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "a growth row");
  GrowthRow row;
  row.action_index = optional_index(r.required("action_index"), r.pointer("action_index"));
  row.action = r.string("action");
  const json& errors = r.required("max_ulp_error");
  if (!errors.is_object()) throw JsonError(r.pointer("max_ulp_error"), "expected an object");
  for (auto it = errors.begin(); it != errors.end(); ++it) {
    const std::string p = json_pointer_append(r.pointer("max_ulp_error"), it.key());
    row.max_ulp_error[quantity_at(json(it.key()), p)] = number_from_json(it.value(), p);
  }
  r.finish(false);
  return row;
}

std::map<std::string, int64_t> counts_from(const json& j, const std::string& pointer) {
  if (!j.is_object()) throw JsonError(pointer, std::string("expected an object, got ") + json_type_name(j));
  std::map<std::string, int64_t> out;
  for (auto it = j.begin(); it != j.end(); ++it)
    out[it.key()] = count_from_json(it.value(), json_pointer_append(pointer, it.key()));
  return out;
}

CoverageReport coverage_from(const json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "the coverage");
  CoverageReport c;
  c.implementation = r.required("implementation");
  c.profile = r.string("profile");
  c.tested = count_from_json(r.required("tested"), r.pointer("tested"));
  c.skipped = count_from_json(r.required("skipped"), r.pointer("skipped"));
  c.out_of_scope = count_from_json(r.required("out_of_scope"), r.pointer("out_of_scope"));
  const json& cases = array_from_json(r.required("left_out_cases"), r.pointer("left_out_cases"));
  for (size_t i = 0; i < cases.size(); ++i) {
    JsonObjectReader x(cases[i], json_pointer_append(r.pointer("left_out_cases"), i), "a left-out case");
    c.left_out_cases.push_back({x.string("id"), x.string("reason"), strings_from_json(x.required("areas"), x.pointer("areas"))});
    x.finish(false);
  }
  const json& rules = array_from_json(r.required("rules"), r.pointer("rules"));
  for (size_t i = 0; i < rules.size(); ++i) {
    JsonObjectReader x(rules[i], json_pointer_append(r.pointer("rules"), i), "a rule");
    AppliedRule rule;
    rule.id = x.string("id");
    rule.kind = x.string("kind");
    rule.uses = count_from_json(x.required("uses"), x.pointer("uses"));
    rule.reason = x.string("reason");
    x.finish(false);
    c.rules.push_back(std::move(rule));
  }
  const json& left = array_from_json(r.required("left_out"), r.pointer("left_out"));
  for (size_t i = 0; i < left.size(); ++i) {
    JsonObjectReader x(left[i], json_pointer_append(r.pointer("left_out"), i), "a left-out feature set");
    std::vector<std::string> features = strings_from_json(x.required("features"), x.pointer("features"));
    c.left_out.emplace_back(std::move(features), x.string("reason"));
    x.finish(false);
  }
  c.exercised = counts_from(r.required("exercised"), r.pointer("exercised"));
  c.not_exercised = strings_from_json(r.required("not_exercised"), r.pointer("not_exercised"));
  // The tables hold every cell that applies; the model keeps the cells some program reached.
  const json& tables = r.required("cells");
  if (!tables.is_object()) throw JsonError(r.pointer("cells"), "expected an object");
  for (auto t = tables.begin(); t != tables.end(); ++t) {
    JsonObjectReader table(t.value(), json_pointer_append(r.pointer("cells"), t.key()), "a coverage table");
    (void)table.string("meaning");
    const json& rows = table.required("rows");
    if (!rows.is_object()) throw JsonError(table.pointer("rows"), "expected an object");
    for (auto row = rows.begin(); row != rows.end(); ++row) {
      const std::string rp = json_pointer_append(table.pointer("rows"), row.key());
      for (const auto& [column, n] : counts_from(row.value(), rp))
        if (n > 0) c.cells[coverage_cell_key(t.key(), row.key(), column)] = n;
    }
    table.finish(false);
  }
  (void)strings_from_json(r.required("empty_cells"), r.pointer("empty_cells"));  // recomputed from the cells
  const json& fields = r.required("optional_fields");
  if (!fields.is_object()) throw JsonError(r.pointer("optional_fields"), "expected an object");
  for (auto f = fields.begin(); f != fields.end(); ++f) {
    JsonObjectReader x(f.value(), json_pointer_append(r.pointer("optional_fields"), f.key()), "an optional field");
    OptionalFieldCount n;
    n.compared = count_from_json(x.required("compared"), x.pointer("compared"));
    n.not_reported = count_from_json(x.required("not_reported"), x.pointer("not_reported"));
    n.not_expected = count_from_json(x.required("not_expected"), x.pointer("not_expected"));
    (void)x.string("status");  // recomputed
    (void)x.string("semantics");
    if (x.has("why_untested")) (void)x.string("why_untested");
    x.finish(false);
    if (n.compared || n.not_reported || n.not_expected) c.optional_fields[f.key()] = n;
  }
  if (const json* w = r.optional("warnings")) c.warnings = strings_from_json(*w, r.pointer("warnings"));
  r.finish(false);
  return c;
}

CaseStatus status_at(const json& j, const std::string& pointer) {
  const std::string s = string_from_json(j, pointer);
  if (s == "passed") return CaseStatus::Passed;
  if (s == "failed") return CaseStatus::Failed;
  if (s == "known") return CaseStatus::Known;
  throw JsonError(pointer, "expected \"passed\", \"failed\" or \"known\", got \"" + s + "\"");
}

CaseReport case_from(const json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "a case");
  CaseReport c;
  LockstepResult& result = c.result;
  c.id = r.string("id");
  c.status = status_at(r.required("status"), r.pointer("status"));
  c.areas = strings_from_json(r.required("areas"), r.pointer("areas"));
  if (const json* d = r.optional("duration_seconds")) c.duration_seconds = number_from_json(*d, r.pointer("duration_seconds"));
  if (c.status == CaseStatus::Known) c.known_reason = r.string("known_reason");
  if (r.has("skipped")) result.skipped = r.string("skipped");
  if (const json* masked = r.optional("masked")) {
    const json& a = array_from_json(*masked, r.pointer("masked"));
    for (size_t i = 0; i < a.size(); ++i) {
      JsonObjectReader m(a[i], json_pointer_append(r.pointer("masked"), i), "a masked difference");
      MaskedDifference md;
      md.difference = difference_from(m);
      md.action_index = optional_index(m.required("action_index"), m.pointer("action_index"));
      md.action = m.string("action");
      md.reason = m.string("reason");
      m.finish(false);
      result.masked.push_back(std::move(md));
    }
  }
  result.actions_run = static_cast<size_t>(count_from_json(r.required("actions_run"), r.pointer("actions_run")));
  // The texts of a case that did not fail: report_json() writes them beside the failure's place.
  auto texts_from = [&c, &result](JsonObjectReader& x) {
    if (x.has("engine_failure")) result.engine_failure = x.string("engine_failure");
    if (x.has("stop_reason")) result.stop_reason = x.string("stop_reason");
    if (x.has("driver_stderr")) result.driver_stderr = x.string("driver_stderr");
    if (x.has("reproduce")) c.reproduce_command = x.string("reproduce");
    if (const json* p = x.optional("program")) c.program = program_at(*p, x.pointer("program"));
    if (const json* p = x.optional("original_program")) c.original_program = program_at(*p, x.pointer("original_program"));
  };
  if (const json* failure = r.optional("failure")) {
    JsonObjectReader f(*failure, r.pointer("failure"), "a failure");
    result.passed = false;
    const std::string at = f.string("at");
    if (at != "setup" && at != "action") throw JsonError(f.pointer("at"), "expected \"setup\" or \"action\"");
    result.failed_at_setup = at == "setup";
    result.failed_action = optional_index(f.required("action_index"), f.pointer("action_index"));
    result.failed_action_name = f.string("action");
    (void)f.string("location");  // recomputed
    (void)f.string("summary");
    const json& diffs = array_from_json(f.required("differences"), f.pointer("differences"));
    for (size_t i = 0; i < diffs.size(); ++i) {
      JsonObjectReader d(diffs[i], json_pointer_append(f.pointer("differences"), i), "a difference");
      result.differences.push_back(difference_from(d));
      d.finish(false);
    }
    texts_from(f);
    if (const json* claims = f.optional("claim_failures")) {
      const json& a = array_from_json(*claims, f.pointer("claim_failures"));
      for (size_t i = 0; i < a.size(); ++i) {
        JsonObjectReader cr(a[i], json_pointer_append(f.pointer("claim_failures"), i), "a claim failure");
        ClaimFailure cf;
        cf.check = cr.string("check");
        cf.claim = cr.string("claim");
        const json& sems = array_from_json(cr.required("semantics"), cr.pointer("semantics"));
        for (size_t k = 0; k < sems.size(); ++k) {
          if (!sems[k].is_string()) throw JsonError(json_pointer_append(cr.pointer("semantics"), k), "expected a string");
          cf.semantics.push_back(sems[k].get<std::string>());
        }
        cr.finish(false);
        result.claim_failures.push_back(std::move(cf));
      }
    }
    if (!f.has("reproduce")) throw JsonError(f.pointer(), "missing field 'reproduce' in a failure");
    if (const json* s = f.optional("shrink_steps"))
      c.shrink_steps = static_cast<size_t>(count_from_json(*s, f.pointer("shrink_steps")));
    f.finish(false);
  } else {
    texts_from(r);
  }
  if (const json* growth = r.optional("growth")) {
    const json& a = array_from_json(*growth, r.pointer("growth"));
    for (size_t i = 0; i < a.size(); ++i) result.growth.push_back(growth_from(a[i], json_pointer_append(r.pointer("growth"), i)));
  }
  r.finish(false);
  return c;
}

}  // namespace

Difference difference_from_json(const json& j, const std::string& pointer) {
  JsonObjectReader r(j, pointer, "a difference");
  Difference d = difference_from(r);
  r.finish(false);
  return d;
}

GrowthRow growth_row_from_json(const json& j, const std::string& pointer) { return growth_from(j, pointer); }

RunReport report_from_json(const json& doc, const std::string& file) {
  try {
    JsonObjectReader r(doc, "", "a run report");
    const std::string format = r.string("format");
    if (format != "lockstep-report/1")
      throw JsonError("/format", "expected \"lockstep-report/1\", got \"" + format + "\"");
    RunReport report;
    report.oracle_engine = r.string("oracle");
    report.under_test_engine = r.string("under_test");
    const std::string mode = r.string("mode");
    const std::optional<RunMode> m = run_mode_from_name(mode);
    if (!m) throw JsonError("/mode", "unknown mode '" + mode + "'");
    report.mode = *m;
    const json& seed = r.required("seed");
    if (!seed.is_number_unsigned()) throw JsonError("/seed", "expected an integer >= 0");
    report.seed = seed.get<uint64_t>();
    report.count = count_from_json(r.required("count"), "/count");
    report.max_size = count_from_json(r.required("max_size"), "/max_size");
    if (const json* s = r.optional("shard")) {
      JsonObjectReader x(*s, "/shard", "the shard");
      ReportShard shard;
      shard.index = count_from_json(x.required("index"), "/shard/index");
      shard.total = count_from_json(x.required("total"), "/shard/total");
      shard.named_cases = count_from_json(x.required("named_cases"), "/shard/named_cases");
      shard.run = x.string("run");
      if (shard.total < 1 || shard.index >= shard.total)
        throw JsonError("/shard", fmt::format("shard {} of {} does not exist", shard.index, shard.total));
      x.finish(false);
      report.shard = shard;
    }
    (void)r.required("summary");  // recomputed from the cases
    if (const json* c = r.optional("coverage")) report.coverage = coverage_from(*c, "/coverage");
    if (const json* u = r.optional("unused_expectations"))
      report.unused_expectations = strings_from_json(*u, "/unused_expectations");
    const json& cases = array_from_json(r.required("cases"), "/cases");
    report.cases.reserve(cases.size());
    for (size_t i = 0; i < cases.size(); ++i) report.cases.push_back(case_from(cases[i], json_pointer_append("/cases", i)));
    if (report.shard && report.shard->named_cases > static_cast<int64_t>(report.cases.size()))
      throw JsonError("/shard/named_cases", "more named cases than cases");
    r.finish(false);
    return report;
  } catch (const JsonError& e) {
    throw InputError(file, e.pointer(), e.message());
  }
}

RunReport read_report_file(const std::string& path) {
  return report_from_text(read_text_file(path, kMaxReportFileBytes, "run reports"), path);
}

RunReport report_from_text(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = parse_json_text(text, kReportDepth, kMaxReportValues);
  } catch (const JsonError& e) {
    throw InputError(file, e.pointer(), e.message());
  }
  return report_from_json(doc, file);
}

}  // namespace lockstep
