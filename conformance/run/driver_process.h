// A driver process: an implementation in any language behind a pipe (fixtures/PROTOCOL.md). This file starts,
// watches, restarts and kills the process and moves lines; driver_protocol.h reads and writes what the lines say.
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
// Start-up and the hello (PROTOCOL.md section 2a). Every process lockstep starts first gets the line
//   {"id": "lockstep-hello", "hello": {"protocol": 1}}
// and has DriverOptions::startup_timeout (60 s) to answer it with
//   {"id": "lockstep-hello", "hello": {"name": "pytorch-python", "version": "1.13.1", "protocol": 1, ...}}
// (the "id" may be left out; other fields of "hello" are kept, see hello()). The per-program timeout counts
// only from writing a program's request, so a slow start (`import torch` on a cold machine) costs no program.
// Drivers written before the hello keep working, without flags:
//  - a driver that answers the hello line with any other line (an error answer, garbage, an echo) has read
//    one line and written one: it is in step, is kept, and is an *old driver* from then on: no later process
//    of this ExternalDriver gets the hello (old_protocol());
//  - a driver that exits after reading the hello line without answering it (the old tools/impl_driver exits
//    2 on a request without "program", Python drivers die of a KeyError) is an old driver too: it is started
//    again at once, without the hello, and the program goes to the new process (one extra start per run);
//  - a driver that exits (or is killed) *before reading* the hello line has failed to start: the command does
//    not exist (/bin/sh exits 127), `import torch` failed, ... Whether the line was read is told by the bytes
//    still unread in its stdin pipe (FIONREAD), so this needs no guess about exit statuses. For an old driver
//    the same holds for the first request a new process gets.
// A driver that does not answer the hello within the start-up timeout, or answers it with a "hello" that
// does not read, has failed to start too.
//
// Start-up failures end the run once: a failed start is tried once more at once (a transient failure),
// except when the retry cannot help (command not found, start-up timeout, a bad hello answer); the second
// start-up failure in a row (or one that cannot be retried) makes the driver *start-up failed* for good:
// that request and every later one answer Status::StartupFailed at once without starting anything, and
// startup_failed() / startup_failure() give the message (the command, its exit status or signal, and its
// stderr). Callers stop the run there (exit status 2) instead of failing every program. The same holds for a
// process that answers the hello and exits before reading a request, twice in a row, and for a driver whose
// programs end in the same fault (garbage, exit, timeout, ...) DriverOptions::max_faults_in_a_row times in a row
// (count_fault(); the message says "gave up").
//
// Blame (issue 29): a driver whose own process ends is noticed also while a child it left holds its stdout (its
// process is watched, main_process_ended()); a request it did not read is not charged: the program goes to a new
// process. Every process a driver started is killed with it (its process group, and by the token below); when
// lockstep itself ends, however it ends, the cleanup guard (cleanup_guard.h) kills them.
//
// Example:
//   ExternalDriver driver("python3 tools/adapters/pytorch_driver.py", DriverOptions{});
//   DriverOutcome out = run_on_driver(driver, "case-1", program);  // driver_protocol.h
//   if (driver.startup_failed()) { std::cerr << driver.startup_failure(); return 2; }
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


namespace lockstep {

struct DriverOptions {
  std::chrono::milliseconds timeout{10000};     // per program, from writing the request to its answer
  std::chrono::milliseconds startup_timeout{60000};  // from starting a process to its answer to the hello
  size_t max_stderr_bytes = size_t{1} << 20;     // per program; more is a failure ("floods stderr")
  size_t max_answer_bytes = size_t{256} << 20;   // one answer line; longer is a failure
  size_t stderr_excerpt_bytes = 4096;            // kept per program for the report
  int max_faults_in_a_row = 10;                  // the same fault (garbage, exit, timeout, ...) this often in a row
                                                 // ends the run (startup_failed()); 0: never
};

// An "unsupported" answer's feature name is cut to this many bytes (docs/programs-and-limits.md "Limits"), a hello answer may be this
// long at most.
inline constexpr size_t kMaxUnsupportedBytes = 256;
inline constexpr size_t kMaxHelloBytes = 65536;

// The raw result of one request: a line, or what went wrong instead.
struct DriverReply {
  enum class Status {
    Line,         // `line` holds the answer (without its newline)
    Exited,       // the driver exited (or closed stdout) before answering
    TimedOut,     // no answer within the timeout; the driver was killed
    StderrFlood,  // more than max_stderr_bytes on stderr; the driver was killed
    LineTooLong,  // an answer line beyond max_answer_bytes; the driver was killed
    StartupFailed,  // the driver cannot start (see startup_failure()); nothing more will be started
  };
  Status status = Status::Line;
  std::string line;
  std::string detail;           // a readable sentence for anything but Line
  std::string stderr_excerpt;   // the first bytes of stderr written while this request was pending
  size_t stderr_bytes = 0;
  std::chrono::nanoseconds elapsed{0};
};

const char* driver_status_name(DriverReply::Status s);  // "line", "exited", "timed_out", ...
// A driver's line as a message quotes it: whole, or its first n bytes (whole UTF-8 characters) and its length.
std::string truncate_for_message(const std::string& s, size_t n = 200);

// The hello line lockstep writes first to every driver process it starts, and the protocol version it speaks.
// Protocol 2 added RMSprop and Adagrad to the programs (fixtures/PROTOCOL.md 2a); a driver may answer with any
// version from kOldestDriverProtocol on, and is held to that version's features (capabilities.h).
inline constexpr int kDriverProtocolVersion = 8;  // 2: RMSprop, Adagrad; 3: softplus; 4: a step's closure; 5: L-BFGS;
                                                  // 6: gradient clipping (SEMANTICS §18); 7: checkpoints (§19);
                                                  // 8: the optimizers' option maximize (§20)
inline constexpr int kMaximizeSinceProtocol = 8;
inline constexpr int kOldestDriverProtocol = 1;
inline constexpr const char* kDriverHelloId = "lockstep-hello";
std::string driver_hello_line();  // {"id": "lockstep-hello", "hello": {"protocol": 3}}

// One driver process, started lazily (with the hello) and restarted after it died or was killed.
class ExternalDriver {
 public:
  explicit ExternalDriver(std::string command, DriverOptions options = {});
  ~ExternalDriver();  // closes the driver's stdin, gives it 200 ms to exit, then kills its process group
  ExternalDriver(const ExternalDriver&) = delete;
  ExternalDriver& operator=(const ExternalDriver&) = delete;

  // Writes `line` (no newline in it) and a newline, and waits for one line of answer. Starts the driver
  // first if none runs (start-up and hello under startup_timeout; the timeout counts from the request).
  DriverReply request(const std::string& line);

  // Starts the driver (start-up and hello) if none runs, without a request: true when it runs. A run calls it
  // first to read the hello's capabilities (capabilities.h); false: startup_failed() says why.
  bool ensure_started();

  // Kills the driver now, with its process group and every process it started (below); the next request starts a
  // new one.
  void kill();

  const std::string& command() const { return command_; }
  const DriverOptions& options() const { return options_; }
  int starts() const { return starts_; }     // how many processes were started so far
  // Bytes of the driver's stdout searched for an answer's newline so far: each byte once, however the answer arrives
  // (a test of linear reading that holds on a loaded machine, where a time limit would not).
  uint64_t bytes_searched() const { return bytes_searched_; }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // The driver's whole hello object ({"name": ..., "version": ..., "protocol": 1, ...}) from the last
  // handshake; null before the first start and for an old driver (one that does not answer the hello).
  const nlohmann::ordered_json& hello() const { return hello_; }
  bool old_protocol() const { return old_protocol_; }  // found not to answer the hello: no more hellos
  // The driver cannot start (see the header comment): every request answers StartupFailed from then on.
  bool startup_failed() const { return startup_failed_; }
  const std::string& startup_failure() const { return startup_failure_; }  // the message, with its stderr
  // Drivers replaced between two programs because they flooded stderr after an answer (more than
  // max_stderr_bytes before the next request): the flood is no program's, so none is charged with it.
  int replaced_after_stderr_flood() const { return replaced_after_stderr_flood_; }
  // Drivers that exited (or closed stdin) after an answer without reading the next request: replaced the same way.
  int replaced_after_exit() const { return replaced_after_exit_; }
  // What a program's outcome was (run_on_driver() tells): max_faults_in_a_row faults of one category in a row make
  // the driver start-up failed for good, with a message that says so (the run ends once, exit 2).
  void count_fault(const std::string& category, const std::string& failure);
  void count_answer();

  // Every process a driver starts carries this variable in its environment, with a value of its own driver
  // process: kill() finds them by it, also those that left the process group (setsid) or were orphaned.
  static constexpr const char* kTokenVariable = "LOCKSTEP_DRIVER_TOKEN";

 private:
  // What one exchange (a line written, one line read) came to; the transport of request() and the hello.
  struct Exchange {
    DriverReply::Status status = DriverReply::Status::Line;
    std::string line;
    std::string what;         // Exited: "exited with status 3" / "was killed by signal 11" / "closed its stdout"
    std::string detail;       // anything but Line: a readable sentence
    bool read_input = true;   // Exited: whether the process read any of the bytes written to it so far
    bool read_request = true; // Exited: whether it read any of this exchange's bytes (unknown counts as read)
    int exit_status = -1;     // Exited: the exit status when it exited
    std::string stderr_excerpt;
    size_t stderr_bytes = 0;
  };
  enum class StartResult { Started, OldDriverExited, Failed, FailedFinal };

  bool spawn(std::string& error);
  void record_startup_failure(StartResult result, const std::string& failure, const std::string& stderr_excerpt);
  StartResult start(std::string& failure, std::string& stderr_excerpt);  // spawn + hello
  Exchange exchange(const std::string& line, std::chrono::steady_clock::time_point deadline,
                    std::chrono::milliseconds timeout);
  bool take_buffered_line(std::string& line);  // an answer line already read, taken out of the buffer
  ssize_t read_stdout_now();                   // what stdout holds now into the buffer: read()'s result
  void read_stderr_now(Exchange& x);           // what stderr holds now into x's excerpt and count
  Exchange ended(Exchange x, size_t written);  // its stdout or its own process ended: Exited, and it is killed
  bool main_process_ended();  // reaped (WNOHANG) now or before; the status is kept for reap()
  std::string reap();  // waits a moment for the exited driver; "exited with status 3" / "was killed by ..."
  void close_fds();
  void kill_descendants();  // every process whose environment holds this driver's token
  int kill_token_holders_once();  // one pass over /proc: how many it killed
  void drain_stderr_between_programs();  // a driver still flooding is killed (the next request starts a new one)
  bool read_some_of_last(size_t n) const;  // of the last n bytes written to its stdin; unknown counts as read

  std::string command_;
  DriverOptions options_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  std::string stdout_buffer_;  // bytes read past the last answer line
  size_t stdout_scanned_ = 0;  // its first bytes known to hold no newline
  uint64_t bytes_searched_ = 0;  // bytes of stdout searched for a newline, over the driver's life
  int starts_ = 0;
  int answered_ = 0;  // answers from the current process
  size_t written_ = 0;  // bytes written to the current process's stdin
  int last_exit_status_ = -1;  // of the process reaped last
  bool reaped_ = false;        // the current process was reaped (main_process_ended())
  int reaped_status_ = 0;
  nlohmann::ordered_json hello_;
  bool old_protocol_ = false;
  int startup_failures_in_a_row_ = 0;
  bool startup_failed_ = false;
  std::string startup_failure_;
  std::string startup_stderr_;  // of the start-up that failed last
  std::string token_;           // kTokenVariable's value for the current process ("" before the first)
  int replaced_after_stderr_flood_ = 0;
  int replaced_after_exit_ = 0;
  int faults_in_a_row_ = 0;
  std::string last_fault_category_;
};

}  // namespace lockstep
