// Helpers shared by the subcommands that write reports and print reproduce lines.
#pragma once

#include <string>

#include "conformance/report/report.h"

namespace lockstep::tools {

// A string quoted for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string& s);

// Writes DIR/STEM.md, .json and .xml atomically (nothing when dir is empty) and prints where they went.
void write_reports(const std::string& dir, const RunReport& report, const std::string& stem);

}  // namespace lockstep::tools
