#include "tools/report_files.h"


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
