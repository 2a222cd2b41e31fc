// Atomic file writing: a report is either the old file or the complete new one, never half written, even
// after a crash or Ctrl-C in the middle of writing.
//
// The contents go to a temporary file in the same directory (same file system), which is flushed to disk
// and then renamed over the destination; on any failure the temporary file is removed. Errors throw
// std::runtime_error whose message names the destination path and the system's reason.
//
// Example:
//   write_file_atomically("out/report.md", markdown);
#pragma once

#include <string>

namespace lockstep {

void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace lockstep
