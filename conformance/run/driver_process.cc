#include "conformance/run/driver_process.h"

#include <algorithm>
#include <atomic>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "conformance/program/json_reader.h"

extern char** environ;

namespace lockstep {

namespace {

using Clock = std::chrono::steady_clock;

void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string truncate_for_message(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t keep = n;
  while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;  // not inside a UTF-8 character
  return s.substr(0, keep) + fmt::format("... (cut: {} bytes in all)", s.size());
}

const char* driver_status_name(DriverReply::Status s) {
  switch (s) {
    case DriverReply::Status::Line: return "line";
    case DriverReply::Status::Exited: return "driver_exited";
    case DriverReply::Status::TimedOut: return "timeout";
    case DriverReply::Status::StderrFlood: return "stderr_flood";
    case DriverReply::Status::LineTooLong: return "answer_too_long";
    case DriverReply::Status::StartupFailed: return "startup_failed";
  }
  return "?";
}

std::string driver_hello_line() {
  nlohmann::ordered_json hello;
  hello["id"] = kDriverHelloId;
  hello["hello"]["protocol"] = kDriverProtocolVersion;
  return hello.dump();
}

ExternalDriver::ExternalDriver(std::string command, DriverOptions options)
    : command_(std::move(command)), options_(options) {
  ignore_sigpipe_once();
}

ExternalDriver::~ExternalDriver() {
  if (pid_ <= 0) return;
  close_fd(stdin_fd_);  // a well-behaved driver exits at end of input
  auto deadline = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || r < 0) {
      ::kill(-pid_, SIGKILL);  // anything it left behind in its group
      kill_descendants();      // or outside it
      pid_ = -1;
      close_fds();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill();
}

void ExternalDriver::close_fds() {
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  stdout_buffer_.clear();
  stdout_scanned_ = 0;
}

void ExternalDriver::kill() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    if (!reaped_) {  // a reaped pid may be another process's by now
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  kill_descendants();
  pid_ = -1;
  close_fds();
}

// A driver's children that called setsid() (or were orphaned) are out of its process group: they are found by
// the token every process it started inherits (issue 14: they outlived lockstep, holding its pipes). A process
// that clears its environment escapes this; none of a driver's usual tools (shells, interpreters) do.
void ExternalDriver::kill_descendants() {
  if (token_.empty()) return;
  // Again while a pass finds one (a process may fork while the list is read), a few passes at most.
  for (int pass = 0; pass < 4 && kill_token_holders_once() > 0; ++pass) {
  }
  // A process in the middle of an exec shows an empty environment for a moment: one more pass after a pause.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int pass = 0; pass < 4 && kill_token_holders_once() > 0; ++pass) {
  }
}

int ExternalDriver::kill_token_holders_once() {
  int killed = 0;
  const std::string needle = std::string(kTokenVariable) + "=" + token_;
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  const pid_t self = ::getpid();
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    const std::string path = std::string("/proc/") + e->d_name + "/environ";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone, or not ours
    std::string env;
    char buf[8192];
    ssize_t r;
    while ((r = ::read(fd, buf, sizeof buf)) > 0 && env.size() < (size_t{1} << 20)) env.append(buf, static_cast<size_t>(r));
    ::close(fd);
    for (size_t at = 0; at < env.size();) {
      size_t stop = env.find('\0', at);
      if (stop == std::string::npos) stop = env.size();
      if (env.compare(at, stop - at, needle) == 0) {
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        ++killed;
        break;
      }
      at = stop + 1;
    }
  }
  ::closedir(proc);
  return killed;
}

// Whether the driver read any of the last `n` bytes written to its stdin: the bytes still in the pipe tell (Linux
// answers FIONREAD on either end of a pipe, also after the reader is gone). Unknown counts as read.
bool ExternalDriver::read_some_of_last(size_t n) const {
  int unread = 0;
  if (stdin_fd_ < 0 || ::ioctl(stdin_fd_, FIONREAD, &unread) != 0) return true;
  return n > 0 && static_cast<size_t>(unread) < n;
}

// stderr written after the last answer belongs to no program: read it before the next request (else the next
// program is charged with it, issue 14). A driver still writing after max_stderr_bytes floods: it is replaced.
void ExternalDriver::drain_stderr_between_programs() {
  if (pid_ <= 0 || stderr_fd_ < 0) return;
  char chunk[65536];
  size_t drained = 0;
  int wait_ms = 0;  // nothing waiting: no delay at all; once something came, until 20 ms of quiet
  // At most 100 ms in all: a driver that keeps logging is read on during the exchange, where what comes before it
  // reads the request is not charged either (request()).
  const auto deadline = Clock::now() + std::chrono::milliseconds(100);
  while (Clock::now() < deadline) {
    pollfd err{stderr_fd_, POLLIN, 0};
    const int pr = ::poll(&err, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0 || !(err.revents & (POLLIN | POLLHUP | POLLERR))) return;
    const ssize_t r = ::read(stderr_fd_, chunk, sizeof chunk);
    if (r == 0) {
      close_fd(stderr_fd_);
      return;
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    drained += static_cast<size_t>(r);
    if (drained > options_.max_stderr_bytes) {
      kill();
      ++replaced_after_stderr_flood_;
      return;
    }
    wait_ms = 20;
  }
}

bool ExternalDriver::spawn(std::string& error) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    error = std::string("cannot create pipes: ") + std::strerror(errno);
    for (int* p : {in, out, err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a kill reaches whatever the shell started; default signal handling
  // (we ignore SIGPIPE, the driver must not inherit that).
  sigset_t default_signals, no_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  sigemptyset(&no_signals);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::string sh = "/bin/sh", dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), command_.data(), nullptr};
  // Its environment, with the token every process it starts inherits (kill_descendants).
  static std::atomic<uint64_t> next_token{0};
  token_ = fmt::format("{}-{}", ::getpid(), next_token++);
  const std::string token_entry = std::string(kTokenVariable) + "=" + token_;
  std::vector<char*> env{const_cast<char*>(token_entry.c_str())};  // first: found early in /proc/*/environ
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, kTokenVariable, std::strlen(kTokenVariable)) != 0 || (*e)[std::strlen(kTokenVariable)] != '=')
      env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  if (rc != 0) {
    error = std::string("cannot start /bin/sh -c: ") + std::strerror(rc);
    close_fd(in[1]);
    close_fd(out[0]);
    close_fd(err[0]);
    return false;
  }
  pid_ = pid;
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  set_nonblocking(stdin_fd_);
  set_nonblocking(stdout_fd_);
  set_nonblocking(stderr_fd_);
  stdout_buffer_.clear();
  stdout_scanned_ = 0;
  ++starts_;
  reaped_ = false;
  answered_ = 0;
  written_ = 0;
  return true;
}

// Whether the driver's own process has ended (then reaped here, its status kept for reap()): a driver that exits
// while a child it left holds its stdout gives no end of stdout (issue 29).
bool ExternalDriver::main_process_ended() {
  if (pid_ <= 0) return false;
  if (reaped_) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  reaped_ = true;
  reaped_status_ = status;
  return true;
}

std::string ExternalDriver::reap() {
  std::string what = "closed its stdout";
  last_exit_status_ = -1;
  if (pid_ > 0) {
    // It closed stdout; give it a moment to exit so that the status can be told.
    auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (!main_process_ended() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int status = reaped_status_;
    if (reaped_) {
      if (WIFEXITED(status)) {
        last_exit_status_ = WEXITSTATUS(status);
        what = fmt::format("exited with status {}", WEXITSTATUS(status));
        // A shell that did not exec the command reports a command killed by signal N as status 128 + N.
        const int code = WEXITSTATUS(status);
        if (code > 128 && code < 128 + 65)
          what += fmt::format(" (a shell's report of signal {}, {}: the command was killed by it)", code - 128,
                              strsignal(code - 128));
      } else if (WIFSIGNALED(status)) {
        what = fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
      }
      ::kill(-pid_, SIGKILL);
      kill_descendants();
      pid_ = -1;
    }
  }
  return what;
}

// An answer line already read from stdout (the driver may have written ahead), taken out of the buffer. Only the
// bytes not searched yet are searched: a long line arriving in chunks costs linear time, not quadratic.
bool ExternalDriver::take_buffered_line(std::string& line) {
  const size_t from = std::min(stdout_scanned_, stdout_buffer_.size());
  const size_t nl = stdout_buffer_.find('\n', from);
  bytes_searched_ += (nl == std::string::npos ? stdout_buffer_.size() : nl + 1) - from;
  if (nl == std::string::npos) {
    stdout_scanned_ = stdout_buffer_.size();
    return false;
  }
  line = stdout_buffer_.substr(0, nl);
  stdout_buffer_.erase(0, nl + 1);
  stdout_scanned_ = 0;
  return true;
}

// Reads what stdout holds now into the buffer: read()'s result (0 at its end, -1 with nothing to read).
ssize_t ExternalDriver::read_stdout_now() {
  char chunk[65536];
  const ssize_t r = ::read(stdout_fd_, chunk, sizeof chunk);
  if (r > 0) stdout_buffer_.append(chunk, static_cast<size_t>(r));
  return r;
}

// Reads what stderr holds now into the exchange's excerpt and count; closes it at its end.
void ExternalDriver::read_stderr_now(Exchange& x) {
  char chunk[65536];
  const ssize_t r = ::read(stderr_fd_, chunk, sizeof chunk);
  if (r > 0) {
    const size_t room = options_.stderr_excerpt_bytes - std::min(options_.stderr_excerpt_bytes, x.stderr_excerpt.size());
    x.stderr_excerpt.append(chunk, std::min(static_cast<size_t>(r), room));
    x.stderr_bytes += static_cast<size_t>(r);
  } else if (r == 0) {
    close_fd(stderr_fd_);
  }
}

// Writes `to_write` and waits until `deadline` for one line on stdout. Anything but a line kills the driver.
ExternalDriver::Exchange ExternalDriver::exchange(const std::string& to_write, Clock::time_point deadline,
                                                  std::chrono::milliseconds timeout) {
  Exchange x;
  auto finish = [&](DriverReply::Status s, std::string detail) {
    x.status = s;
    x.detail = std::move(detail);
    if (s != DriverReply::Status::Line) kill();
    return x;
  };
  size_t written = 0;
  bool stdin_broken = false;

  while (true) {
    if (take_buffered_line(x.line)) return finish(DriverReply::Status::Line, "");
    if (stdout_buffer_.size() > options_.max_answer_bytes)
      return finish(DriverReply::Status::LineTooLong,
                    fmt::format("the driver wrote an answer line longer than {} bytes", options_.max_answer_bytes));

    const auto now = Clock::now();
    if (now >= deadline)
      return finish(DriverReply::Status::TimedOut,
                    fmt::format("no answer within {} ms (the driver was killed)", timeout.count()));
    // In slices of at most 100 ms: the driver's own process is watched too (main_process_ended()).
    int wait_ms = static_cast<int>(std::min<int64_t>(
        100, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));

    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, in_i = -1;
    if (stdout_fd_ >= 0) { fds[n] = {stdout_fd_, POLLIN, 0}; out_i = n++; }
    if (stderr_fd_ >= 0) { fds[n] = {stderr_fd_, POLLIN, 0}; err_i = n++; }
    if (!stdin_broken && written < to_write.size()) { fds[n] = {stdin_fd_, POLLOUT, 0}; in_i = n++; }
    int pr = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return finish(DriverReply::Status::Exited, std::string("poll failed: ") + std::strerror(errno));
    }
    // Nothing came and the driver's own process has ended: what is still in its stdout pipe is read first (it may
    // have answered and then exited); after that it is gone, even if a child it left holds the pipe open.
    if (pr == 0 && main_process_ended()) {
      bool more = false;
      while (stdout_fd_ >= 0 && read_stdout_now() > 0) more = true;
      if (more) continue;
      return ended(std::move(x), written);
    }
    if (in_i >= 0 && (fds[in_i].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(stdin_fd_, to_write.data() + written, to_write.size() - written);
      if (w > 0) {
        written += static_cast<size_t>(w);
        written_ += static_cast<size_t>(w);
      } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
        stdin_broken = true;  // EPIPE: it stopped reading
      }
    }
    if (err_i >= 0 && (fds[err_i].revents & (POLLIN | POLLHUP | POLLERR))) {
      read_stderr_now(x);
      if (x.stderr_bytes > options_.max_stderr_bytes) {
        // Still flooding from before this request, which it has not read: not this program's (request()).
        x.read_request = read_some_of_last(written);
        return finish(DriverReply::Status::StderrFlood,
                      fmt::format("the driver wrote more than {} bytes on stderr for one program (killed)",
                                  options_.max_stderr_bytes));
      }
    }
    if (out_i >= 0 && (fds[out_i].revents & (POLLIN | POLLHUP | POLLERR)) && read_stdout_now() == 0)
      return ended(std::move(x), written);
  }
}

// The end of stdout, or of the driver's own process: collect what stderr still holds, tell whether it read this
// request, reap it (and kill whatever it left), and say so.
ExternalDriver::Exchange ExternalDriver::ended(Exchange x, size_t written) {
  char chunk[65536];
  const size_t chunk_size = sizeof chunk;
  if (stderr_fd_ >= 0) {
    ssize_t e;
    while ((e = ::read(stderr_fd_, chunk, chunk_size)) > 0 &&
           x.stderr_excerpt.size() < options_.stderr_excerpt_bytes) {
      x.stderr_excerpt.append(
          chunk, std::min(static_cast<size_t>(e), options_.stderr_excerpt_bytes - x.stderr_excerpt.size()));
      x.stderr_bytes += static_cast<size_t>(e);
    }
  }
  // Did it read anything we wrote, of this request and at all? Unknown counts as read: the driver is then
  // taken for an old one and started again, which is always safe.
  x.read_request = read_some_of_last(written);
  x.read_input = written_ > 0 && read_some_of_last(written_);
  x.what = reap();
  x.exit_status = last_exit_status_;
  std::string partial = stdout_buffer_.empty()
                            ? std::string()
                            : " (it left an unterminated line: " + truncate_for_message(stdout_buffer_) + ")";
  x.status = DriverReply::Status::Exited;
  x.detail = fmt::format("the driver {} after answering {} program(s), without answering this one{}", x.what,
                         answered_, partial);
  kill();
  return x;
}

ExternalDriver::StartResult ExternalDriver::start(std::string& failure, std::string& stderr_excerpt) {
  std::string error;
  if (!spawn(error)) {
    failure = error;
    return StartResult::FailedFinal;
  }
  if (old_protocol_) return StartResult::Started;  // an old driver gets no hello; its requests tell
  const auto t0 = Clock::now();
  Exchange x = exchange(driver_hello_line() + "\n", t0 + options_.startup_timeout, options_.startup_timeout);
  stderr_excerpt = x.stderr_excerpt;
  switch (x.status) {
    case DriverReply::Status::Line: break;
    case DriverReply::Status::Exited:
      if (x.read_input) {
        // It read the hello and died of it without answering: a driver from before the hello.
        old_protocol_ = true;
        hello_ = nullptr;
        return StartResult::OldDriverExited;
      }
      failure = fmt::format("it {} before reading the hello line", x.what);
      if (x.exit_status == 127 || x.exit_status == 126) {
        failure += x.exit_status == 127 ? " (the shell could not find the command)"
                                        : " (the shell could not execute the command)";
        return StartResult::FailedFinal;
      }
      return StartResult::Failed;
    case DriverReply::Status::TimedOut:
      failure = fmt::format("no answer to the hello within the start-up timeout of {} ms (the driver was killed)",
                            options_.startup_timeout.count());
      return StartResult::FailedFinal;
    case DriverReply::Status::StderrFlood:
      failure = fmt::format("it wrote more than {} bytes on stderr at start-up (killed)", options_.max_stderr_bytes);
      return StartResult::FailedFinal;
    default:
      failure = x.detail;
      return StartResult::FailedFinal;
  }
  if (x.line.size() > kMaxHelloBytes) {
    failure = fmt::format("its answer to the hello is longer than {} bytes (line: {})", kMaxHelloBytes,
                          truncate_for_message(x.line));
    kill();
    return StartResult::FailedFinal;
  }
  // A line: a hello answer ({"hello": {...}}, with "id" "lockstep-hello" or none), or anything else (an old
  // driver answering what it took for a request, or echoing it; it read one line and wrote one, so it is in
  // step).
  nlohmann::ordered_json doc;
  try {
    doc = parse_json_text(x.line, 512);
  } catch (const JsonError&) {
  }
  // An echo of the hello line (`cat` as a driver) is no hello answer either.
  if (!doc.is_object() || !doc.contains("hello") || doc == nlohmann::ordered_json::parse(driver_hello_line())) {
    old_protocol_ = true;
    hello_ = nullptr;
    return StartResult::Started;
  }
  try {
    JsonObjectReader r(doc, "", "an answer to the hello");
    if (r.has("id") && r.string("id") != kDriverHelloId)
      throw JsonError("/id", fmt::format("expected \"{}\"", kDriverHelloId));
    const nlohmann::ordered_json& hello = r.required("hello");
    r.finish(/*allow_comment=*/false);
    if (!hello.is_object())
      throw JsonError("/hello", std::string("expected an object, got ") + json_type_name(hello));
    if (!hello.contains("name")) throw JsonError("/hello", "missing \"name\"");
    if (!hello.contains("version")) throw JsonError("/hello", "missing \"version\"");
    if (!hello.contains("protocol")) throw JsonError("/hello", "missing \"protocol\"");
    if (string_from_json(hello["name"], "/hello/name").empty()) throw JsonError("/hello/name", "empty");
    string_from_json(hello["version"], "/hello/version");
    int64_t protocol = int_from_json(hello["protocol"], "/hello/protocol");
    if (protocol < kOldestDriverProtocol || protocol > kDriverProtocolVersion)
      throw JsonError("/hello/protocol", fmt::format("the driver speaks protocol {}, lockstep speaks {} to {}", protocol,
                                                     kOldestDriverProtocol, kDriverProtocolVersion));
    hello_ = hello;
  } catch (const JsonError& e) {
    failure = fmt::format("its answer to the hello does not read: {}{}: {} (line: {})",
                          e.pointer().empty() ? "" : "at ", e.pointer(), e.message(), truncate_for_message(x.line));
    kill();
    return StartResult::FailedFinal;
  }
  return StartResult::Started;
}

void ExternalDriver::count_answer() { faults_in_a_row_ = 0; }

// The same fault for max_faults_in_a_row programs in a row: the driver is broken, not the programs; the run ends
// once (startup_failed()) instead of failing every program after a restart each (issue 29).
void ExternalDriver::count_fault(const std::string& category, const std::string& failure) {
  if (category == driver_status_name(DriverReply::Status::StartupFailed) || startup_failed_) return;
  faults_in_a_row_ = category == last_fault_category_ ? faults_in_a_row_ + 1 : 1;
  last_fault_category_ = category;
  if (options_.max_faults_in_a_row <= 0 || faults_in_a_row_ < options_.max_faults_in_a_row) return;
  kill();
  startup_failed_ = true;
  startup_failure_ = fmt::format(
      "the driver '{}' gave up: {} programs in a row ended in the same fault ({}), so the run stops here instead of "
      "failing every program (docs/programs-and-limits.md \"Limits\"); the last one: {}",
      command_, faults_in_a_row_, category, failure);
}

// A failed start: tried once more at once (the callers loop) unless it cannot help or it is the second in a row.
void ExternalDriver::record_startup_failure(StartResult result, const std::string& failure,
                                            const std::string& stderr_excerpt) {
  {
    ++startup_failures_in_a_row_;
    if (result == StartResult::Failed && startup_failures_in_a_row_ < 2) return;
    std::string stderr_text = stderr_excerpt;
    while (!stderr_text.empty() && (stderr_text.back() == '\n' || stderr_text.back() == '\r')) stderr_text.pop_back();
    startup_failed_ = true;
    startup_failure_ = fmt::format("the driver '{}' failed to start: {}{}", command_, failure,
                                   startup_failures_in_a_row_ > 1
                                       ? fmt::format(" ({} tries in a row)", startup_failures_in_a_row_)
                                       : std::string());
    startup_failure_ += stderr_text.empty() ? "\nit wrote nothing on stderr" : "\nits stderr:\n" + stderr_text;
    startup_stderr_ = stderr_excerpt;
  }
}

bool ExternalDriver::ensure_started() {
  while (!startup_failed_) {
    if (pid_ > 0) return true;
    std::string failure, stderr_excerpt;
    StartResult result = start(failure, stderr_excerpt);
    if (result == StartResult::OldDriverExited) continue;  // started again at once, without the hello
    if (result != StartResult::Started) {
      record_startup_failure(result, failure, stderr_excerpt);
      continue;
    }
    return true;  // a start counts as good once a program is answered (request())
  }
  return false;
}

DriverReply ExternalDriver::request(const std::string& line) {
  DriverReply reply;
  auto failed = [&] {
    reply.status = DriverReply::Status::StartupFailed;
    reply.detail = startup_failure_;
    reply.stderr_excerpt = startup_stderr_;
    return reply;
  };
  bool retried_unread = false;
  while (true) {
    // A driver that closed its stdin after its last answer cannot read this request: it is replaced before the
    // request is sent, so the program is not charged with the previous one's fault (issue 14: it waited out
    // its whole timeout).
    // The same for one that exited after its last answer, also while a child it left holds its pipes (issue 29).
    if (pid_ > 0 && stdin_fd_ >= 0) {
      pollfd in{stdin_fd_, POLLOUT, 0};
      if ((::poll(&in, 1, 0) == 1 && (in.revents & POLLERR)) || main_process_ended()) {
        kill();
        ++replaced_after_exit_;
      }
    }
    drain_stderr_between_programs();
    if (!ensure_started()) return failed();
    const auto t0 = Clock::now();
    Exchange x = exchange(line + "\n", t0 + options_.timeout, options_.timeout);
    // A process that answered the hello and exited without reading its first request has not started: two in a
    // row end the run once (exit 2), instead of failing every program (issue 29).
    if (x.status == DriverReply::Status::Exited && !x.read_request && !old_protocol_ && answered_ == 0) {
      record_startup_failure(StartResult::Failed,
                             fmt::format("it answered the hello and then {} without reading a request", x.what),
                             x.stderr_excerpt);
      continue;
    }
    // A driver that exited after its last answer without reading this request (it closed stdin or ended in
    // between): its exit is no fault of this program, which goes to a new process, once (issue 14).
    if (x.status == DriverReply::Status::Exited && !x.read_request && !old_protocol_ && !retried_unread) {
      retried_unread = true;
      ++replaced_after_exit_;
      continue;
    }
    // The same for a flood on stderr that began after the last answer and went on before it read this request.
    if (x.status == DriverReply::Status::StderrFlood && !x.read_request && !retried_unread) {
      retried_unread = true;
      ++replaced_after_stderr_flood_;
      continue;
    }
    if (x.status == DriverReply::Status::Exited && !x.read_input && old_protocol_) {
      // An old driver that died before reading its first request: it did not start.
      record_startup_failure(x.exit_status == 127 || x.exit_status == 126 ? StartResult::FailedFinal : StartResult::Failed,
                      fmt::format("it {} before reading its first request{}", x.what,
                                  x.exit_status == 127   ? " (the shell could not find the command)"
                                  : x.exit_status == 126 ? " (the shell could not execute the command)"
                                                         : ""),
                      x.stderr_excerpt);
      continue;
    }
    startup_failures_in_a_row_ = 0;
    if (x.status == DriverReply::Status::Line) ++answered_;
    reply.status = x.status;
    reply.line = std::move(x.line);
    reply.detail = std::move(x.detail);
    reply.stderr_excerpt = std::move(x.stderr_excerpt);
    reply.stderr_bytes = x.stderr_bytes;
    reply.elapsed = Clock::now() - t0;
    return reply;
  }
}

}  // namespace lockstep
