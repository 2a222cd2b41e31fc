#include "conformance/report/conformance_matrix.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "conformance/program/feature_areas.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/program_json.h"
#include "conformance/report/report.h"

namespace lockstep {

namespace {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Reads one report; `file` names it in errors.
class ReportReader {
 public:
  ReportReader(const Json& doc, std::string file) : doc_(doc), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw InputError(file_, pointer, message);
  }
  const Json& member(const Json& j, const std::string& pointer, const std::string& key, Json::value_t type) const {
    const std::string p = json_pointer_append(pointer, key);
    if (!j.is_object() || !j.contains(key)) fail(p, "missing");
    const Json& v = j.at(key);
    if (v.type() != type && !(type == Json::value_t::number_float && v.is_number()))
      fail(p, fmt::format("expected {}, found {}", Json(type).type_name(), json_type_name(v)));
    return v;
  }
  std::string text(const Json& j, const std::string& pointer, const std::string& key) const {
    return member(j, pointer, key, Json::value_t::string).get<std::string>();
  }
  std::string optional_text(const Json& j, const std::string& pointer, const std::string& key) const {
    return j.contains(key) ? text(j, pointer, key) : std::string();
  }
  // A number as the reports write it: a JSON number, or "Infinity"/"-Infinity"/"NaN" (json_number.h).
  double ulps(const Json& v, const std::string& pointer) const {
    if (v.is_number()) return std::abs(v.get<double>());
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "Infinity" || s == "-Infinity" || s == "NaN") return kInf;
    }
    fail(pointer, fmt::format("expected a number, found {}", json_type_name(v)));
  }
  std::vector<std::string> areas(const Json& j, const std::string& pointer) const {
    const std::string p = json_pointer_append(pointer, "areas");
    if (!j.contains("areas")) return {};  // a report written before areas: the case counts only in the total
    std::vector<std::string> out = strings_from_json(j.at("areas"), p);
    for (size_t i = 0; i < out.size(); ++i)
      if (std::find(all_feature_areas().begin(), all_feature_areas().end(), out[i]) == all_feature_areas().end())
        fail(json_pointer_append(p, i), "'" + out[i] + "' is not a feature area (feature_areas.h)");
    return out;
  }

  MatrixCase read_case(const Json& c, const std::string& pointer) const {
    MatrixCase m;
    m.report = file_;
    m.id = text(c, pointer, "id");
    m.areas = areas(c, pointer);
    const std::string status = text(c, pointer, "status");
    if (status == "passed") {
      m.outcome = MatrixOutcome::Passed;
    } else if (status == "known" && c.contains("skipped")) {
      m.outcome = MatrixOutcome::Unsupported;
      m.summary = "unsupported: " + text(c, pointer, "skipped");
    } else if (status == "known" && !c.contains("failure")) {
      // Passed with differences an expectation masked: a known deviation.
      m.outcome = MatrixOutcome::Failed;
      m.known = true;
      m.summary = optional_text(c, pointer, "known_reason");
      read_growth(c, pointer, std::nullopt, m);
    } else if (status == "failed" || status == "known") {
      m.outcome = MatrixOutcome::Failed;
      m.known = status == "known";
      const Json& f = member(c, pointer, "failure", Json::value_t::object);
      const std::string fp = json_pointer_append(pointer, "failure");
      m.summary = text(f, fp, "summary");
      if (m.known) m.summary = optional_text(c, pointer, "known_reason") + " — " + m.summary;
      read_failure_ulps(c, pointer, f, fp, m);
    } else {
      fail(json_pointer_append(pointer, "status"), "'" + status + "' is not passed, failed or known");
    }
    return m;
  }

  void read_failure_ulps(const Json& c, const std::string& pointer, const Json& f, const std::string& fp,
                         MatrixCase& m) const {
    const Json& diffs = member(f, fp, "differences", Json::value_t::array);
    const std::string dp = json_pointer_append(fp, "differences");
    double at_failure = -1;
    for (size_t i = 0; i < diffs.size(); ++i) {
      const std::string p = json_pointer_append(dp, i);
      if (!diffs[i].contains("ulp_error")) continue;  // structural differences have none
      at_failure = std::max(at_failure, ulps(diffs[i].at("ulp_error"), json_pointer_append(p, "ulp_error")));
      if (m.allowed_ulps == 0 && diffs[i].contains("allowed_ulps")) {
        const double bound = ulps(diffs[i].at("allowed_ulps"), json_pointer_append(p, "allowed_ulps"));
        if (std::isfinite(bound)) m.allowed_ulps = bound;  // an "exact" rule has no line to draw
      }
    }
    std::optional<int64_t> failed_index;
    if (f.contains("action_index") && !f.at("action_index").is_null())
      failed_index = int_from_json(f.at("action_index"), json_pointer_append(fp, "action_index"));
    const bool at_setup = optional_text(f, fp, "at") == "setup";
    if (!failed_index && !at_setup) failed_index = -1;  // neither an action nor the setup: no record is the failing one
    const std::string failed_action = optional_text(f, fp, "action");
    read_growth(c, pointer, failed_index, m);
    if (!m.failing_point && at_failure >= 0) {  // no growth rows (an in-process lockstep run): one point
      m.ulps.clear();
      m.ulps.push_back({failed_index ? fmt::format("{} {}", *failed_index, failed_action) : failed_action, at_failure});
      m.failing_point = m.ulps.size() - 1;
    } else if (m.failing_point && at_failure > m.ulps[*m.failing_point].ulps) {
      m.ulps[*m.failing_point].ulps = at_failure;
    }
  }

  // The growth rows (largest ULP error per quantity of each record) as the plot's points, up to the record
  // `failing` (nullopt: the setup record; -1: none) when a failure is given, all of them otherwise.
  void read_growth(const Json& c, const std::string& pointer, std::optional<std::optional<int64_t>> failing,
                   MatrixCase& m) const {
    if (!c.contains("growth")) return;
    const std::string gp = json_pointer_append(pointer, "growth");
    const Json& rows = member(c, pointer, "growth", Json::value_t::array);
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string rp = json_pointer_append(gp, i);
      std::optional<int64_t> index;
      if (rows[i].contains("action_index") && !rows[i].at("action_index").is_null())
        index = int_from_json(rows[i].at("action_index"), json_pointer_append(rp, "action_index"));
      const Json& errors = member(rows[i], rp, "max_ulp_error", Json::value_t::object);
      double worst = 0;
      for (const auto& [quantity, v] : errors.items())
        worst = std::max(worst, ulps(v, json_pointer_append(json_pointer_append(rp, "max_ulp_error"), quantity)));
      const std::string action = text(rows[i], rp, "action");
      m.ulps.push_back({index ? fmt::format("{} {}", *index, action) : action, worst});
      // A free-running case runs on after its first failure; the plot stops there (what was judged).
      if (failing && index == *failing) {
        m.failing_point = m.ulps.size() - 1;
        break;
      }
    }
  }

  // A case id already read for the implementation (a named case is a fixture in replay and a case live) counts
  // once, with the worse outcome: an unexplained failure, a known one, a pass, unsupported.
  static void add_case(MatrixImplementation& impl, MatrixCase c) {
    auto rank = [](const MatrixCase& x) {
      return x.outcome == MatrixOutcome::Failed ? (x.known ? 2 : 3) : x.outcome == MatrixOutcome::Passed ? 1 : 0;
    };
    for (MatrixCase& seen : impl.cases)
      if (seen.id == c.id) {
        if (rank(c) > rank(seen)) seen = std::move(c);
        return;
      }
    impl.cases.push_back(std::move(c));
  }

  // The hello the report holds (coverage.implementation), or null.
  const Json* hello() const {
    if (!doc_.contains("coverage") || !doc_.at("coverage").is_object()) return nullptr;
    const Json& cov = doc_.at("coverage");
    if (!cov.contains("implementation") || !cov.at("implementation").is_object()) return nullptr;
    return &cov.at("implementation");
  }

  // The implementation's name: the hello's name and version, else the engine's name.
  std::string implementation() const {
    if (const Json* h = hello()) {
      const std::string p = "/coverage/implementation";
      const std::string name = optional_text(*h, p, "name"), version = optional_text(*h, p, "version");
      if (!name.empty()) return version.empty() ? name : name + " " + version;
    }
    return text(doc_, "", "under_test");
  }

  std::vector<std::string> emulated() const {
    const Json* h = hello();
    if (!h || !h->contains("emulated")) return {};
    return strings_from_json(h->at("emulated"), "/coverage/implementation/emulated");
  }

  // Optional trace fields (optional_fields.h) the implementation did not report in some observation: untested.
  std::vector<std::string> unreported_fields() const {
    std::vector<std::string> out;
    if (!doc_.contains("coverage") || !doc_.at("coverage").is_object() ||
        !doc_.at("coverage").contains("optional_fields"))
      return out;  // a report written before optional fields
    const std::string p = "/coverage/optional_fields";
    const Json& fields = member(doc_.at("coverage"), "/coverage", "optional_fields", Json::value_t::object);
    for (const auto& [name, counts] : fields.items()) {
      const std::string fp = json_pointer_append(p, name);
      if (member(counts, fp, "not_reported", Json::value_t::number_float).get<double>() > 0) out.push_back(name);
    }
    return out;
  }

  void read_into(MatrixImplementation& impl) const {
    for (const std::string& e : emulated())
      if (std::find(impl.emulated.begin(), impl.emulated.end(), e) == impl.emulated.end()) impl.emulated.push_back(e);
    for (const std::string& f : unreported_fields())
      if (std::find(impl.untested_fields.begin(), impl.untested_fields.end(), f) == impl.untested_fields.end())
        impl.untested_fields.push_back(f);
    const Json& cases = member(doc_, "", "cases", Json::value_t::array);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string p = json_pointer_append(std::string("/cases"), i);
      if (!cases[i].is_object()) fail(p, std::string("expected a case (an object), found ") + json_type_name(cases[i]));
      add_case(impl, read_case(cases[i], p));
    }
    if (doc_.contains("coverage") && doc_.at("coverage").is_object() &&
        doc_.at("coverage").contains("left_out_cases")) {
      const std::string lp = "/coverage/left_out_cases";
      const Json& left = member(doc_.at("coverage"), "/coverage", "left_out_cases", Json::value_t::array);
      for (size_t i = 0; i < left.size(); ++i) {
        const std::string p = json_pointer_append(lp, i);
        MatrixCase m;
        m.report = file_;
        m.id = text(left[i], p, "id");
        m.outcome = MatrixOutcome::Unsupported;
        m.summary = "left out: " + optional_text(left[i], p, "reason");
        m.areas = areas(left[i], p);
        add_case(impl, std::move(m));
      }
    }
  }

 private:
  const Json& doc_;
  std::string file_;
};

void add(AreaCounts& counts, const MatrixCase& c) {
  switch (c.outcome) {
    case MatrixOutcome::Passed: ++counts.passed; break;
    case MatrixOutcome::Failed: ++counts.failed; counts.known += c.known; break;
    case MatrixOutcome::Unsupported: ++counts.unsupported; break;
  }
}

std::string counts_text(const AreaCounts& c) {
  if (c.passed + c.failed + c.unsupported == 0) return "–";
  std::string failed = std::to_string(c.failed);
  if (c.known) failed += fmt::format(" ({} known)", c.known);
  return fmt::format("{} / {} / {}", c.passed, failed, c.unsupported);
}

std::string markdown_cell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

std::string ulps_text(double u) {
  if (std::isinf(u)) return "∞";
  return fmt::format("{:.3g}", u);
}

const char* verdict(const AreaCounts& c) {
  if (c.failed > 0) return "fail";
  if (c.passed > 0) return "pass";
  if (c.unsupported > 0) return "unsupported";
  return "none";
}

// An SVG line chart of log10(1 + ULPs) per record, the bound as a dashed line, the failing record marked.
std::string ulp_plot(const MatrixCase& c) {
  const double width = 360, height = 140, left = 44, right = 8, top = 10, bottom = 28;
  double top_value = 1;
  bool any_infinite = false;
  for (const UlpPoint& p : c.ulps) {
    if (std::isinf(p.ulps)) any_infinite = true;
    else top_value = std::max(top_value, std::log10(1 + p.ulps));
  }
  top_value = std::max(top_value, std::log10(1 + c.allowed_ulps));
  top_value = std::ceil(top_value) + (any_infinite ? 1 : 0);
  auto y_of = [&](double ulps) {
    const double v = std::isinf(ulps) ? top_value : std::log10(1 + ulps);
    return top + (height - top - bottom) * (1 - v / top_value);
  };
  const size_t n = c.ulps.size();
  auto x_of = [&](size_t i) {
    return n <= 1 ? (left + width - right) / 2 : left + (width - left - right) * static_cast<double>(i) / (n - 1);
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">"
      "<title>{2}: largest ULP error per action</title>",
      width, height, xml_escape(c.id));
  // Axes and decades.
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" class=\"axis\"/>", left, top, height - bottom);
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"axis\"/>", left, height - bottom,
                     width - right);
  for (int d = 0; d <= static_cast<int>(top_value); ++d) {
    const bool infinity_row = any_infinite && d == static_cast<int>(top_value);
    const double y = top + (height - top - bottom) * (1 - d / top_value);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">{}</text>", left - 4, y + 3,
                       infinity_row ? "∞" : (d == 0 ? "0" : fmt::format("1e{}", d)));
  }
  if (c.allowed_ulps > 0) {
    const double y = y_of(c.allowed_ulps);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"bound\"><title>bound: {3} ULP</title></line>",
                       left, y, width - right, ulps_text(c.allowed_ulps));
  }
  std::string points;
  for (size_t i = 0; i < n; ++i) points += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(c.ulps[i].ulps));
  if (n > 1) svg += fmt::format("<polyline points=\"{}\" class=\"line\"/>", points);
  for (size_t i = 0; i < n; ++i) {
    const bool failing = c.failing_point && *c.failing_point == i;
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" class=\"{}\"><title>{}: {} ULP</title></circle>",
                       x_of(i), y_of(c.ulps[i].ulps), failing ? 4 : 2.5, failing ? "failing" : "point",
                       xml_escape(c.ulps[i].label), ulps_text(c.ulps[i].ulps));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\">{}</text>", left, height - 8,
                     xml_escape(n ? c.ulps.front().label : ""));
  if (n > 1)
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">{}</text>", width - right,
                       height - 8, xml_escape(c.ulps.back().label));
  svg += "</svg>";
  return svg;
}

}  // namespace

ConformanceMatrix read_conformance_reports(const std::vector<std::string>& paths) {
  ConformanceMatrix m;
  for (const std::string& path : paths) {
    const std::string text = read_text_file(path);
    Json doc;
    try {
      doc = parse_json_text(text, 512);
    } catch (const JsonError& e) {
      throw InputError(path, e.pointer(), e.message());
    }
    ReportReader reader(doc, path);
    try {
      if (!doc.is_object()) reader.fail("", std::string("expected a lockstep report (an object), found ") + json_type_name(doc));
      const std::string format = reader.text(doc, "", "format");
      if (format != "lockstep-report/1")
        reader.fail("/format", "'" + format + "' is not a lockstep report format this lockstep reads (lockstep-report/1)");
      const std::string name = reader.implementation();
      auto it = std::find_if(m.implementations.begin(), m.implementations.end(),
                             [&](const MatrixImplementation& i) { return i.name == name; });
      if (it == m.implementations.end()) {
        MatrixImplementation named;
        named.name = name;
        m.implementations.push_back(std::move(named));
        it = m.implementations.end() - 1;
      }
      it->reports.push_back(path);
      reader.read_into(*it);
    } catch (const JsonError& e) {  // a field of the wrong type deep in a case (json_reader.h's typed readers)
      throw InputError(path, e.pointer(), e.message());
    }
  }
  for (MatrixImplementation& impl : m.implementations) {
    for (const MatrixCase& c : impl.cases) {
      add(impl.total, c);
      for (const std::string& area : c.areas) add(impl.by_area[area], c);
    }
  }
  return m;
}

std::string conformance_matrix_markdown(const ConformanceMatrix& m) {
  std::string out = "# Conformance matrix\n\n";
  out += "Cases per implementation and feature area: **passed / failed / unsupported**. Failed includes the known "
         "deviations (failures an expectations file explains), counted again in parentheses. A case counts in every "
         "area its program exercises (conformance/program/feature_areas.h), once in the total; a case id in several "
         "reports of one implementation (a named case replayed and run live) counts once, with its worse outcome.\n\n";
  out += "| implementation | total |";
  for (const std::string& a : all_feature_areas()) out += " " + a + " |";
  out += "\n|---|---|";
  for (size_t i = 0; i < all_feature_areas().size(); ++i) out += "---|";
  out += "\n";
  for (const MatrixImplementation& impl : m.implementations) {
    out += fmt::format("| {} | {} |", markdown_cell(impl.name), counts_text(impl.total));
    for (const std::string& a : all_feature_areas()) {
      auto it = impl.by_area.find(a);
      out += " " + counts_text(it == impl.by_area.end() ? AreaCounts{} : it->second) + " |";
    }
    out += "\n";
  }
  for (const MatrixImplementation& impl : m.implementations) {
    out += fmt::format("\n## {}\n\nReports: {}\n\n", markdown_cell(impl.name),
                       [&] {
                         std::string s;
                         for (const std::string& r : impl.reports) s += (s.empty() ? "`" : ", `") + markdown_cell(r) + "`";
                         return s;
                       }());
    if (!impl.emulated.empty()) {
      out += "Emulated by the adapter (these cases test the adapter, not the framework):\n\n";
      for (const std::string& e : impl.emulated) out += "- " + markdown_cell(e) + "\n";
      out += "\n";
    }
    if (!impl.untested_fields.empty()) {
      out += "Optional trace fields it does not report (untested, PROTOCOL.md 4a):";
      for (const std::string& f : impl.untested_fields) out += " `" + markdown_cell(f) + "`";
      out += "\n\n";
    }
    size_t failing = 0;
    for (const MatrixCase& c : impl.cases) {
      if (c.outcome != MatrixOutcome::Failed) continue;
      if (failing++ == 0) out += "| case | areas | known | first difference | largest ULP error per action |\n|---|---|---|---|---|\n";
      std::string series;
      for (const UlpPoint& p : c.ulps) series += (series.empty() ? "" : " ") + ulps_text(p.ulps);
      std::string areas;
      for (const std::string& a : c.areas) areas += (areas.empty() ? "" : ", ") + a;
      std::string summary = c.summary;
      if (summary.size() > 240) {  // the reports hold all of it; cut at a UTF-8 character boundary
        size_t cut = 237;
        while (cut > 0 && (static_cast<unsigned char>(summary[cut]) & 0xC0) == 0x80) --cut;
        summary = summary.substr(0, cut) + "...";
      }
      out += fmt::format("| `{}` | {} | {} | {} | {} |\n", markdown_cell(c.id), areas, c.known ? "yes" : "**no**",
                         markdown_cell(summary), series);
    }
    if (failing == 0) out += "No failing case.\n";
  }
  return out;
}

std::string conformance_matrix_html(const ConformanceMatrix& m, size_t max_plots) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep conformance matrix</title>\n"
      "<style>\n"
      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:center;font-size:14px}th{background:#f4f4f4}"
      "td.name{text-align:left;font-weight:600}td.pass{background:#d9f2d9}td.fail{background:#f7d4d4}"
      "td.unsupported{background:#eee;color:#777}td.none{color:#aaa}"
      ".case{display:inline-block;vertical-align:top;margin:8px;width:370px;font-size:12px}"
      ".case code{font-size:12px;word-break:break-all}.summary{color:#555;height:3.6em;overflow:hidden}"
      "svg .axis{stroke:#999;stroke-width:1}svg .bound{stroke:#c60;stroke-dasharray:4 3;stroke-width:1}"
      "svg .line{fill:none;stroke:#36c;stroke-width:1.5}svg .point{fill:#36c}svg .failing{fill:#c00}"
      "svg .tick{font-size:10px;fill:#555}\n"
      "</style></head><body>\n<h1>Conformance matrix</h1>\n"
      "<p>Cases per implementation and feature area: <b>passed / failed / unsupported</b>. Failed includes the known "
      "deviations (failures an expectations file explains), counted again in parentheses. A case counts in every "
      "area its program exercises, once in the total; a case id in several reports of one implementation counts once, "
      "with its worse outcome.</p>\n<table>\n<tr><th>implementation</th><th>total</th>";
  for (const std::string& a : all_feature_areas()) out += "<th>" + xml_escape(a) + "</th>";
  out += "</tr>\n";
  for (const MatrixImplementation& impl : m.implementations) {
    out += fmt::format("<tr><td class=\"name\">{}</td><td class=\"{}\">{}</td>", xml_escape(impl.name),
                       verdict(impl.total), xml_escape(counts_text(impl.total)));
    for (const std::string& a : all_feature_areas()) {
      auto it = impl.by_area.find(a);
      const AreaCounts c = it == impl.by_area.end() ? AreaCounts{} : it->second;
      out += fmt::format("<td class=\"{}\">{}</td>", verdict(c), xml_escape(counts_text(c)));
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  for (const MatrixImplementation& impl : m.implementations) {
    out += fmt::format("<h2>{}</h2>\n<p>Reports:", xml_escape(impl.name));
    for (const std::string& r : impl.reports) out += " <code>" + xml_escape(r) + "</code>";
    out += "</p>\n";
    if (!impl.emulated.empty()) {
      out += "<p>Emulated by the adapter (these cases test the adapter, not the framework):</p>\n<ul>";
      for (const std::string& e : impl.emulated) out += "<li>" + xml_escape(e) + "</li>";
      out += "</ul>\n";
    }
    if (!impl.untested_fields.empty()) {
      out += "<p>Optional trace fields it does not report (untested, PROTOCOL.md 4a):";
      for (const std::string& f : impl.untested_fields) out += " <code>" + xml_escape(f) + "</code>";
      out += "</p>\n";
    }
    size_t failing = 0, plotted = 0;
    for (const MatrixCase& c : impl.cases) {
      if (c.outcome != MatrixOutcome::Failed) continue;
      ++failing;
      if (plotted >= max_plots) continue;
      ++plotted;
      out += fmt::format("<div class=\"case\"><code>{}</code>{}<div class=\"summary\">{}</div>", xml_escape(c.id),
                         c.known ? " (known)" : " <b>(not explained)</b>", xml_escape(c.summary));
      out += c.ulps.empty() ? std::string("<p>No per-action errors in the report (a structural or driver failure, or "
                                          "an in-process run that records none).</p>")
                            : ulp_plot(c);
      out += "</div>\n";
    }
    if (failing == 0) out += "<p>No failing case.</p>\n";
    else if (failing > plotted)
      out += fmt::format("<p>{} more failing cases are not plotted (see the Markdown matrix and the reports).</p>\n",
                         failing - plotted);
  }
  out += "<p>Plots: the largest error of each action's numbers in ULPs of their magnitude (log scale), the "
         "failing action in red, the tolerance bound dashed.</p>\n</body></html>\n";
  return out;
}

}  // namespace lockstep
