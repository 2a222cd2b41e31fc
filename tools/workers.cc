// Worker processes for --jobs (workers.h).
#include "tools/workers.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "conformance/program/cleanup_guard.h"
#include "conformance/program/file_system.h"

extern char** environ;

namespace lockstep::tools {

namespace {

// A worker is this program started again, with the same arguments, and this variable: "W JOBS PARENT_PID DIR".
constexpr const char* kWorkerVariable = "LOCKSTEP_WORKER";

struct WorkerRole {
  int index = -1;  // -1: not a worker
  int jobs = 0;
  std::string dir;
};

// Read once, then removed from the environment, so that what a worker starts (a driver) is no worker. A worker
// dies with its parent (PR_SET_PDEATHSIG): a killed `--jobs` run leaves no worker behind.
const WorkerRole& worker_role() {
  static const WorkerRole role = [] {
    WorkerRole r;
    const char* value = std::getenv(kWorkerVariable);
    if (!value) return r;
    std::istringstream in(value);
    long parent = 0;
    ::unsetenv(kWorkerVariable);
    if (!(in >> r.index >> r.jobs >> parent) || !std::getline(in >> std::ws, r.dir)) {
      std::cerr << "lockstep: " << kWorkerVariable << " is set but is not 'W JOBS PARENT_PID DIR'\n";
      _exit(2);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(2);  // the parent is already gone
    return r;
  }();
  return role;
}

// Set by SIGINT, SIGTERM or SIGHUP while the parent waits for its workers.
volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int signal) { interrupted = signal; }

std::string read_all(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// This process's arguments as it was started (/proc/self/cmdline), so that a worker runs the same command.
std::vector<std::string> own_arguments() {
  const std::string text = read_all("/proc/self/cmdline");
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\0') {
      args.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return args;
}

// In a worker process: runs its share and exits with its status.
[[noreturn]] void be_worker(const WorkerRole& role, int jobs, const std::string& dir,
                            const std::function<int(int w, const std::string& own_dir)>& work) {
  if (role.jobs != jobs || role.dir != dir) {
    std::cerr << "lockstep: worker " << role.index << " was started for --jobs " << role.jobs << " in " << role.dir
              << " but reached --jobs " << jobs << " in " << dir << "\n";
    _exit(2);
  }
  const std::string own = files::join(dir, std::to_string(role.index));
  std::fflush(stdout);
  std::fflush(stderr);
  const int out = open(files::join(own, "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = open(files::join(own, "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(2);
  int code = 2;
  try {
    code = work(role.index, own);
  } catch (const std::bad_alloc&) {
    std::cerr << "lockstep: out of memory: this machine could not hold what the run needed (docs/programs-and-limits.md \"Limits\")\n";
  } catch (const std::exception& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

// Starts worker w: this executable again with this process's arguments, stdin and stdout from/to /dev/null until
// the worker reaches run_workers(), stderr into DIR/w/startup-stderr (a failure before that point is seen).
pid_t spawn_worker(int w, int jobs, const std::string& dir, const std::string& exe,
                   const std::vector<std::string>& args) {
  const std::string own = files::join(dir, std::to_string(w));
  const std::string startup = files::join(own, "startup-stderr");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, kWorkerVariable, std::strlen(kWorkerVariable)) != 0 ||
        (*e)[std::strlen(kWorkerVariable)] != '=')
      env_strings.push_back(*e);
  env_strings.push_back(fmt::format("{}={} {} {} {}", kWorkerVariable, w, jobs, static_cast<long>(getpid()), dir));
  std::vector<char*> env, argv;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> arg_copy = args;
  for (std::string& s : arg_copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  // A clean signal state: no inherited mask, default dispositions for what ends a worker (as ExternalDriver does).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, startup.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

}  // namespace

void claim_worker_role() { (void)worker_role(); }

// Directories "PREFIX.PID.XXXXXX" in $TMPDIR whose process PID no longer runs: left by a run that could not remove
// its own (its cleanup guard was killed with it). Removed, and said once.
static void remove_stale_directories(const std::string& prefix) {
  const std::string dir = files::temp_directory();
  std::vector<std::string> names;
  try {
    names = files::list_names(dir);
  } catch (const std::exception&) {
    return;
  }
  for (const std::string& name : names) {
    if (name.compare(0, prefix.size() + 1, prefix + ".") != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size() + 1, &end, 10);
    if (pid <= 0 || *end != '.' || (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
    try {
      files::remove_all(files::join(dir, name));
      std::cerr << "lockstep: removed " << files::join(dir, name) << ", left by an earlier run (process " << pid
                << ") that was killed\n";
    } catch (const std::exception&) {
    }
  }
}

WorkerDir::WorkerDir(const std::string& prefix) {
  if (worker_role().index >= 0) {  // a worker uses its parent's directory
    path_ = worker_role().dir;
    return;
  }
  remove_stale_directories(prefix);
  // The pid in the name tells a later run whether its owner still runs; the cleanup guard removes it if this
  // process is killed (cleanup_guard.h).
  owned_ = std::make_unique<files::TempDir>(fmt::format("{}.{}", prefix, static_cast<long>(getpid())));
  path_ = owned_->path();
  cleanup_guard::remove_on_exit(path_);
}

WorkerDir::~WorkerDir() {
  if (!owned_) return;
  owned_.reset();
  cleanup_guard::forget(path_);
}

// Stops the workers not yet waited for: SIGTERM, then SIGKILL to any still there after a grace period (a worker's
// drivers die with it: its own cleanup guard kills them).
static void stop_workers(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) kill(p, SIGTERM);
  const auto all_gone = [&] {
    bool gone = true;
    for (pid_t p : pids) {
      const pid_t r = waitpid(p, nullptr, WNOHANG);
      if (r == 0) gone = false;
    }
    return gone;
  };
  for (int tries = 0; tries < 50 && !all_gone(); ++tries) usleep(100000);  // 5 s for all together
  for (pid_t p : pids)
    if (waitpid(p, nullptr, WNOHANG) == 0) {
      kill(p, SIGKILL);
      while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {}
    }
}

std::vector<WorkerEnd> run_workers(int jobs, const std::string& dir,
                                   const std::function<int(int w, const std::string& own_dir)>& work) {
  if (const WorkerRole& role = worker_role(); role.index >= 0) be_worker(role, jobs, dir, work);
  // The running executable itself, even if its file was replaced since (readlink would say "(deleted)").
  const std::string exe = "/proc/self/exe";
  const std::vector<std::string> args = own_arguments();
  if (args.empty()) throw std::runtime_error("cannot start workers: /proc/self/cmdline is not readable");
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int w = 0; w < jobs; ++w) {
    std::string why;
    try {
      files::create_directories(files::join(dir, std::to_string(w)));
      if (const pid_t pid = spawn_worker(w, jobs, dir, exe, args); pid > 0) pids.push_back(pid);
      else why = std::strerror(errno);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      stop_workers(pids);
      throw std::runtime_error(fmt::format("cannot start worker {} of --jobs {}: {}", w, jobs, why));
    }
  }
  // Interrupted while waiting (Ctrl-C, a CI job's timeout): the workers are stopped, the directory removed, and the
  // signal ends this process as it would have without workers.
  interrupted = 0;
  struct sigaction action {}, old_int {}, old_term {}, old_hup {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: waitpid returns EINTR
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGHUP, &action, &old_hup);
  // The workers are watched as a set (waitpid(-1), issue 29): the first that fails (a signal, an exit status
  // other than 0 and 1) stops the others at once; its failure is the run's.
  std::vector<WorkerEnd> ends(pids.size());
  std::vector<bool> ended(pids.size(), false);
  size_t running = pids.size();
  bool failed = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (interrupted) {
      const int signal = interrupted;
      std::vector<pid_t> left;
      for (size_t w = 0; w < pids.size(); ++w)
        if (!ended[w]) left.push_back(pids[w]);
      stop_workers(left);
      files::remove_all(dir);
      cleanup_guard::forget(dir);
      std::signal(signal, SIG_DFL);
      std::raise(signal);
      _exit(128 + signal);
    }
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: none left (cannot happen while `running` > 0)
    }
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) continue;  // another child of this process (the cleanup guard)
    const size_t w = static_cast<size_t>(it - pids.begin());
    ended[w] = true;
    --running;
    if (WIFEXITED(status)) ends[w].exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) ends[w].signal = WTERMSIG(status);
    if (!failed && (ends[w].signal != 0 || (ends[w].exit_code != 0 && ends[w].exit_code != 1))) {
      failed = true;
      std::vector<pid_t> left;
      for (size_t o = 0; o < pids.size(); ++o)
        if (!ended[o]) left.push_back(pids[o]);
      stop_workers(left);  // reaped there: they count as ended by SIGTERM (or SIGKILL), which is not their fault
      for (size_t o = 0; o < pids.size(); ++o)
        if (!ended[o]) {
          ended[o] = true;
          --running;
          ends[o].exit_code = 2;
          ends[o].stopped = true;
        }
    }
  }
  for (size_t w = 0; w < pids.size(); ++w) {
    const std::string own = files::join(dir, std::to_string(w));
    ends[w].out = read_all(files::join(own, "stdout"));
    ends[w].err = read_all(files::join(own, "stderr"));
    // A worker that never reached its share (it failed while starting, or the command took another path there) did
    // not do its work, whatever its exit status: what it said while starting is why.
    if (!ends[w].stopped && !files::exists(files::join(own, "stdout"))) {
      ends[w].err = read_all(files::join(own, "startup-stderr")) +
                    fmt::format("lockstep: worker {} of --jobs {} ended before it reached its share\n", w, jobs);
      if (ends[w].signal == 0 && (ends[w].exit_code == 0 || ends[w].exit_code == 1)) ends[w].exit_code = 2;
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return ends;
}

std::string workers_stderr(const std::vector<WorkerEnd>& ends) {
  std::set<std::string> said;
  std::string out;
  for (const WorkerEnd& e : ends) {
    std::istringstream err(e.err);
    for (std::string line; std::getline(err, line);)
      if (said.insert(line).second) out += line + "\n";
  }
  return out;
}

std::string failed_worker(const std::vector<WorkerEnd>& ends) {
  for (size_t w = 0; w < ends.size(); ++w) {
    if (ends[w].stopped) continue;  // stopped because another failed
    if (ends[w].signal)
      return fmt::format("worker {} of --jobs {} was killed by signal {} ({})", w, ends.size(), ends[w].signal,
                         strsignal(ends[w].signal));
    if (ends[w].exit_code != 0 && ends[w].exit_code != 1)
      return fmt::format("worker {} of --jobs {} exited with status {}", w, ends.size(), ends[w].exit_code);
  }
  return "";
}

bool report_workers(const std::vector<WorkerEnd>& ends, const std::string& command) {
  std::cerr << workers_stderr(ends);
  const std::string why = failed_worker(ends);
  if (why.empty()) return false;
  for (const WorkerEnd& e : ends)
    if (e.signal) {
      std::cerr << command << ": " << why << "\n";
      break;
    }
  return true;
}

}  // namespace lockstep::tools
