// Atomic file writing: temporary files in the same directory, fsync, rename (see atomic_file.h).
#include "conformance/report/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "conformance/program/cleanup_guard.h"

namespace lockstep {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw std::runtime_error("cannot write " + path + ": " + what + ": " + std::strerror(error));
}

// Writes `contents` to a new temporary file beside `path`, flushed to disk; returns its name.
std::string write_temporary(const std::string& path, const std::string& contents) {
  if (path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  // "dir/.name.PID.tmp-XXXXXX": same directory as the destination, so rename() is atomic; the pid tells a later
  // run whether the writer still runs (remove_stale_temporaries()).
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw std::runtime_error("cannot write " + path + ": the path names a directory");
  std::string temp_name = dir + "." + base + "." + std::to_string(::getpid()) + ".tmp-XXXXXX";
  std::vector<char> temp(temp_name.begin(), temp_name.end());
  temp.push_back('\0');
  const int fd = mkstemp(temp.data());
  if (fd < 0) fail(path, "cannot create a temporary file in its directory", errno);
  temp_name = temp.data();
  cleanup_guard::remove_on_exit(temp_name);  // removed even if this process is killed now (cleanup_guard.h)

  auto abandon = [&](const std::string& what, int error) {
    ::close(fd);
    ::unlink(temp_name.c_str());
    fail(path, what, error);
  };
  // mkstemp creates 0600; a report should get the usual permissions (0666 minus the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) abandon("cannot set permissions", errno);

  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp_name.c_str());
    fail(path, "close failed", error);
  }
  return temp_name;
}

// Holds back the signals that end a run from a terminal or a CI runner while it lives; they are delivered
// when it ends (the default action then ends the process with the set complete).
class HeldSignals {
 public:
  HeldSignals() {
    sigset_t held;
    sigemptyset(&held);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&held, s);
    pthread_sigmask(SIG_BLOCK, &held, &previous_);
  }
  ~HeldSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

 private:
  sigset_t previous_;
};

// Temporary files ".NAME.PID.tmp-XXXXXX" beside `path` whose writer PID no longer runs: a run killed while the
// cleanup guard could not act (it was killed too) left them. Removed.
void remove_stale_temporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string prefix = "." + (slash == std::string::npos ? path : path.substr(slash + 1)) + ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || std::strncmp(end, ".tmp-", 5) != 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string& file : stale) ::unlink(file.c_str());
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  write_files_atomically({{path, contents}});
}

// The cleanup guard holds the set: it removes the temporary files if this process is killed while they are written,
// and completes the renames if it is killed between two of them (a set is never split, cleanup_guard.h).
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  HeldSignals held;
  for (const auto& file : files) remove_stale_temporaries(file.first);
  std::vector<std::string> temps;
  auto remove_temps = [&](size_t from) {
    for (size_t i = from; i < temps.size(); ++i) {
      ::unlink(temps[i].c_str());
      cleanup_guard::forget(temps[i]);
    }
  };
  try {
    for (const auto& [path, contents] : files) temps.push_back(write_temporary(path, contents));
  } catch (...) {
    remove_temps(0);
    throw;
  }
  for (size_t i = 0; i < files.size(); ++i) cleanup_guard::rename_on_exit(temps[i], files[i].first);
  for (size_t i = 0; i < files.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      const int error = errno;
      remove_temps(i);
      fail(files[i].first, "rename failed", error);
    }
  }
  for (const std::string& temp : temps) cleanup_guard::forget(temp);
}

}  // namespace lockstep
