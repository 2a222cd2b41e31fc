// The guard process that cleans up after this one however it ends (cleanup_guard.h).
#include "conformance/program/cleanup_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace lockstep::cleanup_guard {

namespace {

constexpr size_t kMaxPath = 4000;

// The guard: a POSIX shell reading its registrations on stdin (one per line: "R PATH" remove, "M FROM" then "T TO"
// rename, "F PATH" forget), then, at the end of input (its lockstep is gone), doing the work. Spawned, not forked:
// a fork of a process with LibTorch mapped costs about 0.7 s of copied pages. $1: lockstep's pid.
constexpr const char* kGuardScript = R"sh(
trap '' INT TERM HUP QUIT PIPE TSTP TTIN TTOU USR1 USR2
nl='
'
list=''
while IFS= read -r line; do
  case $line in
    "F "*)
      path=${line#F }; kept=''; skip=0
      while IFS= read -r entry; do
        [ -z "$entry" ] && continue
        if [ $skip = 1 ]; then skip=0; continue; fi
        case $entry in
          "R $path") ;;
          "M $path") skip=1 ;;
          *) kept="$kept$entry$nl" ;;
        esac
      done <<LIST
$list
LIST
      list=$kept ;;
    "R "*|"M "*|"T "*) list="$list$line$nl" ;;
  esac
done
# 1. Every process with a driver token of this lockstep; a process in the middle of an exec shows no environment
#    for a moment: passes until two in a row find none.
quiet=0; pass=0
while [ $quiet -lt 2 ] && [ $pass -lt 50 ]; do
  pids=$(grep -lzs -e "^LOCKSTEP_DRIVER_TOKEN=$1-" /proc/[0-9]*/environ 2>/dev/null | sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p')
  if [ -n "$pids" ]; then kill -9 $pids 2>/dev/null; quiet=0; else quiet=$((quiet + 1)); fi
  pass=$((pass + 1))
  sleep 0.02
done
# 2. The renames of a set it did not finish; 3. what it left.
from=''
while IFS= read -r entry; do
  case $entry in
    "M "*) from=${entry#M } ;;
    "T "*) if [ -n "$from" ] && [ -e "$from" ]; then mv -f -- "$from" "${entry#T }"; fi; from='' ;;
  esac
done <<LIST
$list
LIST
while IFS= read -r entry; do
  case $entry in "R "*) rm -rf -- "${entry#R }" ;; esac
done <<LIST
$list
LIST
)sh";

int socket_fd = -1;  // this process's end; -1: no guard
pid_t owner = 0;     // the process that started the guard (a fork of it has no guard)
pid_t guard = -1;
std::mutex send_mutex;

bool registrable(const std::string& path) {
  return !path.empty() && path.size() <= kMaxPath && path.find('\n') == std::string::npos &&
         path.find('\0') == std::string::npos;
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
  const std::string parent = std::to_string(::getpid());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // Its own process group: a kill of the run's group (a CI job's timeout) leaves the guard to clean up after it.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::string sh = "/bin/sh", dash_c = "-c", script = kGuardScript, name = "lockstep-guard", arg = parent;
  char* argv[] = {sh.data(), dash_c.data(), script.data(), name.data(), arg.data(), nullptr};
  std::string path = "PATH=/usr/bin:/bin";
  char* env[] = {path.data(), nullptr};  // no driver token of its own
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(ends[1]);
  if (rc != 0) {
    ::close(ends[0]);
    return;
  }
  socket_fd = ends[0];
  owner = ::getpid();
  guard = pid;
}

bool running() { return socket_fd >= 0 && owner == ::getpid(); }
int guard_pid() { return running() ? guard : -1; }

void remove_on_exit(const std::string& path) {
  if (registrable(path)) send_record("R " + path + "\n");
}

void rename_on_exit(const std::string& from, const std::string& to) {
  if (registrable(from) && registrable(to)) send_record("M " + from + "\nT " + to + "\n");
}

void forget(const std::string& path) {
  if (registrable(path)) send_record("F " + path + "\n");
}

}  // namespace lockstep::cleanup_guard
