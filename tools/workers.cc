// Worker processes for --jobs (workers.h).
#include "tools/workers.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace lockstep::tools {

namespace fs = std::filesystem;

WorkerDir::WorkerDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a temporary directory for --jobs: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

WorkerDir::~WorkerDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {

// Set by SIGINT, SIGTERM or SIGHUP while the parent waits for its workers.
volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int signal) { interrupted = signal; }

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<WorkerEnd> run_workers(int jobs, const std::string& dir,
                                   const std::function<int(int w, const std::string& own_dir)>& work) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int w = 0; w < jobs; ++w) {
    const fs::path own = fs::path(dir) / std::to_string(w);
    fs::create_directories(own);
    const pid_t pid = fork();
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      for (pid_t p : pids) kill(p, SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      throw std::runtime_error(fmt::format("cannot start worker {} of --jobs {}: {}", w, jobs, why));
    }
    if (pid == 0) {
      const int out = open((own / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      const int err = open((own / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(2);
      int code = 2;
      try {
        code = work(w, own.string());
      } catch (const std::bad_alloc&) {
        std::cerr << "lockstep: out of memory: this machine could not hold what the run needed (README \"Limits\")\n";
      } catch (const std::exception& e) {
        std::cerr << "lockstep: " << e.what() << "\n";
      }
      std::fflush(stdout);
      std::fflush(stderr);
      std::cout.flush();
      std::cerr.flush();
      _exit(code);
    }
    pids.push_back(pid);
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
  std::vector<WorkerEnd> ends(pids.size());
  for (size_t w = 0; w < pids.size(); ++w) {
    int status = 0;
    while (waitpid(pids[w], &status, 0) < 0 && errno == EINTR && !interrupted) {}
    if (interrupted) {
      const int signal = interrupted;
      for (pid_t p : pids) kill(p, SIGTERM);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      std::error_code ec;
      fs::remove_all(dir, ec);
      std::signal(signal, SIG_DFL);
      std::raise(signal);
      _exit(128 + signal);
    }
    if (WIFEXITED(status)) ends[w].exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) ends[w].signal = WTERMSIG(status);
    const fs::path own = fs::path(dir) / std::to_string(w);
    ends[w].out = read_all(own / "stdout");
    ends[w].err = read_all(own / "stderr");
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
