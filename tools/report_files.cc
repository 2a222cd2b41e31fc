#include "tools/report_files.h"


#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "conformance/report/atomic_file.h"
#include "conformance/program/file_system.h"

namespace lockstep::tools {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string scope_reproduce_flags(const std::string& features, const std::string& exclude_features,
                                  const std::string& profile) {
  std::string flags;
  if (!features.empty()) flags += " --features " + shell_quote(features);
  if (!exclude_features.empty()) flags += " --exclude-features " + shell_quote(exclude_features);
  if (!profile.empty()) flags += " --profile " + shell_quote(profile);
  return flags;
}

std::string reproduce_report_dir_flag(const std::string& case_id) {
  std::string folder = "lockstep-repro/";
  for (char c : case_id.substr(0, 200))
    folder += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (case_id.empty() || case_id == "." || case_id == "..") folder += "case";
  return " --report-dir " + shell_quote(folder);
}

std::string path_for_reproduce(const std::string& path) {
  try {
    return files::canonical(path);
  } catch (const std::exception&) {
    return path;
  }
}

std::string untested_line(const RunReport& report) {
  std::map<std::string, size_t> reasons;
  size_t skipped = 0;
  for (const CaseReport& c : report.cases)
    if (c.status == CaseStatus::Known && !c.result.skipped.empty()) {
      ++skipped;
      // A run's reason quotes the driver ("the driver answered unsupported 'X'"), a replay's is X.
      std::string why = c.result.skipped;
      const std::string quoted = "the driver answered unsupported '";
      if (why.rfind(quoted, 0) == 0 && why.size() > quoted.size() && why.back() == '\'')
        why = why.substr(quoted.size(), why.size() - quoted.size() - 1);
      ++reasons[why];
    }
  const int64_t left_out = report.coverage ? report.coverage->out_of_scope : 0;
  if (skipped == 0 && left_out == 0) return "";
  std::vector<std::pair<size_t, std::string>> common;
  for (const auto& [why, n] : reasons) common.emplace_back(n, why);
  std::stable_sort(common.begin(), common.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string line = fmt::format("skipped {}", skipped);
  if (skipped > 0) {
    line += " (the implementation answered unsupported: ";
    for (size_t i = 0; i < common.size() && i < 3; ++i)
      line += fmt::format("{}'{}' {}", i ? ", " : "", common[i].second.substr(0, 60), common[i].first);
    line += common.size() > 3 ? fmt::format(", {} other reasons)", common.size() - 3) : ")";
  }
  line += fmt::format(", left out {}", left_out);
  if (left_out > 0) line += " (outside the scope: the hello's supports, --features, the profile)";
  return line + "; the report lists each with why";
}

std::string mostly_skipped_warning(size_t skipped, size_t total, const std::string& what) {
  if (total == 0 || skipped * 2 <= total) return "";
  return fmt::format(
      "{} of {} {} were skipped (the implementation answered unsupported), so this verdict rests on few cases. "
      "A driver's hello can declare what it supports (fixtures/PROTOCOL.md 2a, \"supports\"; `lockstep features` "
      "lists the names): lockstep then generates and replays only that. Or narrow the run: --profile NAME "
      "(fixtures/profiles/) or --exclude-features LIST",
      skipped, total, what);
}

void warn_if_mostly_skipped(RunReport& report) {
  if (report.shard || !report.coverage) return;
  size_t random = 0, skipped = 0;
  for (const CaseReport& c : report.cases) {
    if (c.id.rfind("random-", 0) != 0) continue;
    ++random;
    skipped += c.status == CaseStatus::Known && !c.result.skipped.empty();
  }
  const std::string warning = mostly_skipped_warning(skipped, random, "random programs");
  if (warning.empty()) return;
  fmt::print("warning: {}\n", warning);
  report.coverage->warnings.push_back(warning);
}

void write_reports(const std::string& dir, const RunReport& report, const std::string& stem) {
  if (dir.empty()) return;
  files::create_directories(dir);
  // One set: the three files of a run appear together or not at all (atomic_file.h).
  write_files_atomically({{dir + "/" + stem + ".md", report_markdown(report)},
                          {dir + "/" + stem + ".json", report_json_text(report)},
                          {dir + "/" + stem + ".xml", report_junit(report)}});
  fmt::print("reports: {0}/{1}.md, {0}/{1}.json, {0}/{1}.xml\n", dir, stem);
}

}  // namespace lockstep::tools
