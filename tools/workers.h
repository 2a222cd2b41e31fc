// Worker processes for --jobs (`lockstep run`, `replay`, `mutants`): the work is split over worker processes, each
// with its own engines, LibTorch and driver, writing what it found into its own directory; the parent gathers it.
//
// A worker is this executable started again (posix_spawn, then exec) with the parent's own arguments and the
// variable LOCKSTEP_WORKER: it runs the same command up to run_workers(), which there runs its share, work(w, ...),
// and exits. Not fork() alone: a LibTorch may have started threads by then (CUDA builds do when the library is
// loaded; the oracle's thread pool once it has run), and a forked child of a threaded process may only call
// async-signal-safe functions until it execs: a lock another thread held at the fork stays held in the child for
// good. A fresh process has no such state. Workers die with the parent (PR_SET_PDEATHSIG), even of SIGKILL.
//
// Example:
//   WorkerDir dir("lockstep-jobs");                                   // a temporary directory, removed at scope exit
//   std::vector<WorkerEnd> ends = run_workers(2, dir.path(), [&](int w, const std::string& own) {
//     return do_slice(w, own);                                        // the worker's exit status
//   });
//   if (const std::string why = failed_worker(ends); !why.empty()) ...  // a signal or an exit status other than 0/1
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance/program/file_system.h"

namespace lockstep::tools {

// A fresh temporary directory ($TMPDIR or /tmp), removed with everything in it when this goes out of scope.
// In a worker, its parent's directory, left alone.
class WorkerDir {
 public:
  // "$TMPDIR/PREFIX.PID.XXXXXX"; removes such directories of processes that no longer run (a killed run's), saying
  // so on stderr, and has the cleanup guard remove this one if this process is killed (cleanup_guard.h).
  explicit WorkerDir(const std::string& prefix);  // throws std::runtime_error when it cannot be made
  ~WorkerDir();
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<files::TempDir> owned_;  // null in a worker
  std::string path_;
};

struct WorkerEnd {
  int exit_code = 2;   // when it exited
  int signal = 0;      // when a signal killed it
  std::string out;     // what it wrote to stdout and stderr
  std::string err;
  bool stopped = false;  // stopped by the parent because another worker failed (its output is partial)
};

// Runs work(w, DIR/w) in `jobs` worker processes (w = 0..jobs-1; DIR/w exists; the worker's stdout and stderr go
// to DIR/w/stdout and DIR/w/stderr) and waits for all. An exception out of `work` is a message and exit 2. In a
// worker process (see above) it runs that worker's share and does not return. The code before it must do the same
// in parent and worker: the worker gets there through the same arguments.
std::vector<WorkerEnd> run_workers(int jobs, const std::string& dir,
                                   const std::function<int(int w, const std::string& own_dir)>& work);

// Reads LOCKSTEP_WORKER (once; a process started as a worker learns it here, then removes the variable and arms
// PR_SET_PDEATHSIG). run_main() calls it first thing, before any thread or child process exists; later calls are
// cheap.
void claim_worker_role();

// Each distinct line of the workers' stderr once, in worker order (they share warnings about the same scope).
std::string workers_stderr(const std::vector<WorkerEnd>& ends);
// "" when every worker exited 0 or 1; else which one failed and how ("worker 1 of 2 was killed by signal 9 ...",
// "worker 0 of 2 exited with status 2").
std::string failed_worker(const std::vector<WorkerEnd>& ends);
// Writes workers_stderr() to stderr and, when a worker was killed by a signal (it said nothing), "COMMAND: worker
// ... was killed by signal ..."; true when a worker failed (the command then exits 2; one that exited 2 said why).
bool report_workers(const std::vector<WorkerEnd>& ends, const std::string& command);

}  // namespace lockstep::tools
