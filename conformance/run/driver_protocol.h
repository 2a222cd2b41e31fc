// The driver protocol on top of a driver process (driver_process.h): a program's request line, the answer's
// reading (a trace, "unsupported", or a failure with its category), and one program's round trip.
//
// Example:
//   ExternalDriver driver("python3 tools/adapters/pytorch_driver.py");
//   DriverOutcome out = run_on_driver(driver, "case-1", program_to_json(program));
//   if (out.kind == DriverOutcome::Kind::Trace) ... out.trace ...
#pragma once

#include <chrono>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program/trace.h"
#include "conformance/run/driver_process.h"

namespace lockstep {

// {"id": ID, "program": PROGRAM} as one line (compact JSON, no newline).
std::string driver_request_line(const std::string& id, const nlohmann::ordered_json& program_json);

// One program's outcome on a driver.
struct DriverOutcome {
  enum class Kind { Trace, Unsupported, Failure };
  Kind kind = Kind::Failure;
  Trace trace;                  // Trace
  std::string feature;          // Unsupported: the feature the driver named
  std::string failure;          // Failure: a readable sentence ("timed out after 10000 ms", ...)
  std::string failure_category; // Failure: "driver_exited", "timeout", "stderr_flood", "garbage", ...,
                                // "startup_failed" (the driver cannot start: stop the run, startup_failed())
  std::string stderr_excerpt;
  std::chrono::nanoseconds elapsed{0};
};

// Reads an answer line for request `id` (no I/O). A malformed answer gives a Failure with category
// "garbage" naming the JSON pointer of the problem; an answer for another id, category "wrong_id". A trace
// that lacks an optional field the hello announces (`observes`, optional_fields.h) is garbage too, naming
// the first observation without it.
DriverOutcome parse_driver_answer(const std::string& line, const std::string& id,
                                  const std::set<std::string>& observes = {});

// The optional trace fields a hello announces ("observes"), as far as they are strings (capabilities.h
// reports the wrong types).
std::set<std::string> announced_fields(const nlohmann::ordered_json& hello);

// Sends the program, reads the answer, parses it (with the fields the driver's hello announces). After any
// failure the driver is killed, so the next program starts with a fresh process (a driver out of step cannot
// answer for the wrong program).
DriverOutcome run_on_driver(ExternalDriver& driver, const std::string& id,
                            const nlohmann::ordered_json& program_json);

}  // namespace lockstep
