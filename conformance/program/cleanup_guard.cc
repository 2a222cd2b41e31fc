// The guard process that cleans up after this one however it ends (cleanup_guard.h).
#include "conformance/program/cleanup_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace lockstep::cleanup_guard {

namespace {

// The variable ExternalDriver puts in every driver's environment (external_driver.h kTokenVariable).
constexpr char kTokenVariable[] = "LOCKSTEP_DRIVER_TOKEN";
constexpr size_t kMaxPath = 4000;

int socket_fd = -1;  // this process's end; -1: no guard
pid_t owner = 0;     // the process that started the guard (a fork of it has no guard)
std::mutex send_mutex;

// ---- the guard's side: async-signal-safe calls and static storage only ----

struct Entry {
  char kind = 0;  // 'R' remove, 'M' rename, 0 free
  char from[kMaxPath + 1];
  char to[kMaxPath + 1];
};
constexpr int kEntries = 64;
Entry entries[kEntries];
char inbox[2 * (2 * kMaxPath + 8)];
size_t inbox_used = 0;
char environ_buffer[1 << 20];

size_t length(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

void copy(char* to, const char* from, size_t n) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i];
  to[n] = '\0';
}

bool equal(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// A record: 'R' path NUL | 'M' from NUL to NUL | 'F' path NUL. Returns its size, 0 when incomplete.
size_t take_record(const char* at, size_t n) {
  if (n == 0) return 0;
  const int fields = at[0] == 'M' ? 2 : 1;
  int seen = 0;
  for (size_t i = 1; i < n; ++i)
    if (at[i] == '\0' && ++seen == fields) {
      const char* first = at + 1;
      const size_t first_length = length(first);
      if (at[0] == 'F') {
        for (Entry& e : entries)
          if (e.kind && equal(e.from, first)) e.kind = 0;
      } else if (first_length <= kMaxPath && (at[0] == 'R' || length(first + first_length + 1) <= kMaxPath)) {
        for (Entry& e : entries)
          if (!e.kind) {
            e.kind = at[0];
            copy(e.from, first, first_length);
            if (at[0] == 'M') copy(e.to, first + first_length + 1, length(first + first_length + 1));
            break;
          }
      }
      return i + 1;
    }
  return 0;
}

void write_decimal(char*& out, long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (n > 0) *out++ = digits[--n];
}

// One pass over /proc: SIGKILL to every process whose environment holds `needle` (at the start of an entry).
int kill_token_holders(const char* needle, size_t needle_length) {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return 0;
  const pid_t self = ::getpid();
  int killed = 0;
  alignas(8) char entries_buffer[8192];
  while (true) {
    const long got = ::syscall(SYS_getdents64, proc, entries_buffer, sizeof entries_buffer);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name
      unsigned short reclen;
      std::memcpy(&reclen, entries_buffer + at + 16, sizeof reclen);
      const char* name = entries_buffer + at + 19;
      at += reclen;
      long pid = 0;
      bool numeric = *name != '\0';
      for (const char* c = name; *c; ++c) {
        if (*c < '0' || *c > '9') numeric = false;
        else pid = pid * 10 + (*c - '0');
      }
      if (!numeric || pid == self || pid <= 1) continue;
      char path[64] = "/proc/";
      char* out = path + 6;
      write_decimal(out, pid);
      const char tail[] = "/environ";
      for (const char* c = tail; *c; ++c) *out++ = *c;
      *out = '\0';
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      size_t used = 0;
      while (used < sizeof environ_buffer) {
        const ssize_t r = ::read(fd, environ_buffer + used, sizeof environ_buffer - used);
        if (r <= 0) break;
        used += static_cast<size_t>(r);
      }
      ::close(fd);
      for (size_t i = 0; i + needle_length <= used; ++i)
        if ((i == 0 || environ_buffer[i - 1] == '\0') && std::memcmp(environ_buffer + i, needle, needle_length) == 0) {
          ::kill(static_cast<pid_t>(pid), SIGKILL);
          ++killed;
          break;
        }
    }
  }
  ::close(proc);
  return killed;
}

[[noreturn]] void be_guard(int fd, pid_t parent) {
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2}) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(s, &ignore, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_NAME, "lockstep-guard", 0, 0, 0);
  ::setpgid(0, 0);  // out of the run's process group: a kill of that group leaves the guard to clean up after it
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    for (int std_fd = 0; std_fd < 3; ++std_fd) ::dup2(null, std_fd);
    if (null > 2) ::close(null);
  }
  // Nothing of the parent's but the socket: a driver's pipe held open here would never see its end.
  for (int other = 3; other < 65536; ++other)
    if (other != fd && ::fcntl(other, F_GETFD) != -1) ::close(other);

  while (true) {
    const ssize_t r = ::read(fd, inbox + inbox_used, sizeof inbox - inbox_used);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // the parent ended (or closed its end)
    inbox_used += static_cast<size_t>(r);
    size_t at = 0;
    while (size_t taken = take_record(inbox + at, inbox_used - at)) at += taken;
    if (at == 0 && inbox_used == sizeof inbox) at = inbox_used;  // a record too long: dropped
    for (size_t i = at; i < inbox_used; ++i) inbox[i - at] = inbox[i];
    inbox_used -= at;
  }

  // 1. The drivers of the parent and whatever they started.
  char needle[64];
  char* out = needle;
  for (const char* c = kTokenVariable; *c; ++c) *out++ = *c;
  *out++ = '=';
  write_decimal(out, parent);
  *out++ = '-';
  const size_t needle_length = static_cast<size_t>(out - needle);
  for (int pass = 0, quiet = 0; pass < 50 && quiet < 2; ++pass) {
    // A process in the middle of an exec shows no environment for a moment: passes until two in a row find none.
    quiet = kill_token_holders(needle, needle_length) > 0 ? 0 : quiet + 1;
    timespec pause{0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  // 2. The renames of a set of files the parent did not finish.
  for (Entry& e : entries)
    if (e.kind == 'M') ::rename(e.from, e.to);
  // 3. The files and directories it left.
  static char* argv[kEntries + 4];
  int argc = 0;
  argv[argc++] = const_cast<char*>("rm");
  argv[argc++] = const_cast<char*>("-rf");
  argv[argc++] = const_cast<char*>("--");
  for (Entry& e : entries)
    if (e.kind == 'R') argv[argc++] = e.from;
  if (argc == 3) ::_exit(0);
  argv[argc] = nullptr;
  char* no_environment[] = {nullptr};
  ::execve("/bin/rm", argv, no_environment);
  ::_exit(0);
}

void send_record(const std::string& record) {
  if (socket_fd < 0 || owner != ::getpid()) return;
  std::lock_guard<std::mutex> lock(send_mutex);
  size_t sent = 0;
  while (sent < record.size()) {
    const ssize_t n = ::send(socket_fd, record.data() + sent, record.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the guard is gone: nothing more to do
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

void start() {
  if (socket_fd >= 0) return;
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(ends[0]);
    ::close(ends[1]);
    return;
  }
  if (pid == 0) {
    ::close(ends[0]);
    be_guard(ends[1], parent);
  }
  ::close(ends[1]);
  socket_fd = ends[0];
  owner = parent;
}

bool running() { return socket_fd >= 0 && owner == ::getpid(); }

void remove_on_exit(const std::string& path) {
  if (path.empty() || path.size() > kMaxPath || path.find('\0') != std::string::npos) return;
  send_record("R" + path + std::string(1, '\0'));
}

void rename_on_exit(const std::string& from, const std::string& to) {
  if (from.empty() || from.size() > kMaxPath || to.size() > kMaxPath) return;
  send_record("M" + from + std::string(1, '\0') + to + std::string(1, '\0'));
}

void forget(const std::string& path) {
  if (path.empty() || path.size() > kMaxPath) return;
  send_record("F" + path + std::string(1, '\0'));
}

}  // namespace lockstep::cleanup_guard
