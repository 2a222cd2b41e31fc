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
#include <utility>
#include <vector>

namespace lockstep {

void write_file_atomically(const std::string& path, const std::string& contents);

// Writes several files as one set (a run's reports): every file goes to its temporary file first; only when all
// are written are they renamed into place, one after the other. SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE are
// held back from the first temporary file to the last rename, so an interrupted run leaves the old set or the
// new one and no temporary file. Against SIGKILL the cleanup guard (cleanup_guard.h, where started) holds the set:
// it removes the temporary files of a set being written and completes the renames of one being renamed; temporary
// files of writers that no longer run (".NAME.PID.tmp-*") are removed by the next write beside them. On an error
// nothing is renamed if a write failed, every temporary file is removed, and the message names the file.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace lockstep
