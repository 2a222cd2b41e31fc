// The cleanup of a lockstep process, held by a second process so that it happens however this one ends: normally,
// by an exception, by SIGINT/SIGTERM/SIGHUP (default action), by SIGKILL (the OOM killer, a CI job's timeout), or
// by a crash (issue 29).
//
// start() spawns the *guard*: a small POSIX shell (`sh -c SCRIPT lockstep-guard PID`, in its own process group,
// ignoring the signals that end a run) whose stdin is a socket from this process. The kernel closes this process's
// end when it ends, whatever ends it; the guard then
//   1. kills every process that carries a driver token of this process (ExternalDriver::kTokenVariable, value
//      "PID-N"): the drivers, what they started, also children that left the process group (setsid), passes
//      over /proc until two in a row find none;
//   2. completes the renames registered with rename_on_exit() (a report set half renamed is finished);
//   3. removes the files and directories registered with remove_on_exit() (rm -rf).
// Registrations are lines on the socket; forget() undoes one when this process has done the work itself. A path
// with a newline in it is not registered. Without start() (a test binary, a framework's own runner that does not
// call run_main) every call is a no-op and cleanup is what destructors do.
// Example (tools/cli.cc, first thing; then anywhere):
//   cleanup_guard::start();
//   cleanup_guard::remove_on_exit(dir);   // gone even after SIGKILL of this process
//   ... files::remove_all(dir); cleanup_guard::forget(dir);
#pragma once

#include <string>

namespace lockstep::cleanup_guard {

// Spawns the guard (once per process; later calls do nothing). Call it before this process starts anything.
void start();
bool running();  // start() succeeded and this is the process that called it
int guard_pid();  // the guard's process id (-1 without one): tests wait for it to end

// Register a path (at most 4,000 bytes, no newline; others are not registered) or forget it. A rename registered is done
// by the guard only if `from` still exists then.
void remove_on_exit(const std::string& path);
void rename_on_exit(const std::string& from, const std::string& to);
void forget(const std::string& path);  // every registration naming `path` (as a removal, or as a rename's `from`)

}  // namespace lockstep::cleanup_guard
