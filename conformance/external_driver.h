// Driving an implementation in any language over a pipe: the driver protocol of fixtures/PROTOCOL.md.
//
// A driver is a command (run with `/bin/sh -c COMMAND`, in its own process group) that reads one request
// per line on stdin and writes one answer per line on stdout, in order:
//   request:  {"id": "grad-sgd-momentum-0001", "program": PROGRAM}          (program_json.h)
//   answer:   {"id": "grad-sgd-momentum-0001", "trace": TRACE}              (trace_json.h)
//         or  {"id": "grad-sgd-momentum-0001", "unsupported": "amsgrad"}    (reported as skipped)
// Whatever else the driver does is a per-program failure, and the next program goes on: it crashes or
// exits (the driver is restarted for the next program), hangs past the per-program timeout (killed,
// restarted), writes a line that is not an answer or answers another id (killed and restarted, as it may
// be out of step), or writes more than the stderr cap while handling one program (killed, restarted).
// Its stderr is drained all the time (so it never blocks on a full pipe); the first bytes of it per
// program are kept for the report.
//
// Example:
//   ExternalDriver driver("python3 tools/adapters/pytorch_driver.py", DriverOptions{});
//   DriverOutcome out = run_on_driver(driver, "case-1", program);
//   if (out.kind == DriverOutcome::Kind::Trace) ... out.trace ...
//   else if (out.kind == DriverOutcome::Kind::Unsupported) ... out.feature ...
//   else std::cerr << out.failure << "\n" << out.stderr_excerpt;
//
// Note: the first ExternalDriver sets SIGPIPE to SIG_IGN for the whole process (a driver that closed its
// stdin must give EPIPE, not kill the harness).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program.h"
#include "conformance/trace.h"

namespace lockstep {

struct DriverOptions {
  std::chrono::milliseconds timeout{10000};     // per program, from writing the request to its answer
  size_t max_stderr_bytes = size_t{1} << 20;     // per program; more is a failure ("floods stderr")
  size_t max_answer_bytes = size_t{256} << 20;   // one answer line; longer is a failure
  size_t stderr_excerpt_bytes = 4096;            // kept per program for the report
};

// The raw result of one request: a line, or what went wrong instead.
struct DriverReply {
  enum class Status {
    Line,         // `line` holds the answer (without its newline)
    Exited,       // the driver exited (or closed stdout) before answering
    TimedOut,     // no answer within the timeout; the driver was killed
    StderrFlood,  // more than max_stderr_bytes on stderr; the driver was killed
    LineTooLong,  // an answer line beyond max_answer_bytes; the driver was killed
    SpawnFailed,  // the command could not be started at all (pipes, fork)
  };
  Status status = Status::Line;
  std::string line;
  std::string detail;           // a readable sentence for anything but Line
  std::string stderr_excerpt;   // the first bytes of stderr written while this request was pending
  size_t stderr_bytes = 0;
  std::chrono::nanoseconds elapsed{0};
};

const char* driver_status_name(DriverReply::Status s);  // "line", "exited", "timed_out", ...

// One driver process, started lazily and restarted after it died or was killed.
class ExternalDriver {
 public:
  explicit ExternalDriver(std::string command, DriverOptions options = {});
  ~ExternalDriver();  // closes the driver's stdin, gives it 200 ms to exit, then kills its process group
  ExternalDriver(const ExternalDriver&) = delete;
  ExternalDriver& operator=(const ExternalDriver&) = delete;

  // Writes `line` (no newline in it) and a newline, and waits for one line of answer.
  DriverReply request(const std::string& line);

  // Kills the driver's process group now; the next request starts a new one.
  void kill();

  const std::string& command() const { return command_; }
  const DriverOptions& options() const { return options_; }
  int starts() const { return starts_; }     // how many processes were started so far
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  bool start(std::string& error);
  std::string reap_description();  // waits for the exited driver; "exited with status 3" / "killed by signal 11"
  void close_fds();

  std::string command_;
  DriverOptions options_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  std::string stdout_buffer_;  // bytes read past the last answer line
  int starts_ = 0;
  int answered_ = 0;  // answers from the current process
};

// ---------------------------------------------------------------------------------------------------------
// The protocol on top of the pipe.

// {"id": ID, "program": PROGRAM} as one line (compact JSON, no newline).
std::string driver_request_line(const std::string& id, const nlohmann::ordered_json& program_json);

// One program's outcome on a driver.
struct DriverOutcome {
  enum class Kind { Trace, Unsupported, Failure };
  Kind kind = Kind::Failure;
  Trace trace;                  // Trace
  std::string feature;          // Unsupported: the feature the driver named
  std::string failure;          // Failure: a readable sentence ("timed out after 10000 ms", ...)
  std::string failure_category; // Failure: "driver_exited", "timeout", "stderr_flood", "garbage", ...
  std::string stderr_excerpt;
  std::chrono::nanoseconds elapsed{0};
};

// Reads an answer line for request `id` (no I/O). A malformed answer gives a Failure with category
// "garbage" naming the JSON pointer of the problem; an answer for another id, category "wrong_id".
DriverOutcome parse_driver_answer(const std::string& line, const std::string& id);

// Sends the program, reads the answer, parses it. After any failure the driver is killed, so the next
// program starts with a fresh process (a driver out of step cannot answer for the wrong program).
DriverOutcome run_on_driver(ExternalDriver& driver, const std::string& id,
                            const nlohmann::ordered_json& program_json);

}  // namespace lockstep
