// Fuzz target: what lockstep reads from a driver (fixtures/PROTOCOL.md): the hello's capabilities and the answer
// lines, i.e. parse_driver_answer() (conformance/run/driver_protocol.h) with the trace reader behind it
// (trace_from_json, conformance/program/trace_json.h), announced_fields() and capabilities_from_hello()
// (conformance/run/capabilities.h).
//
// Input layout: HELLO_LINE '\n' ANSWER. The first line is read as the driver's answer to the hello (as
// ExternalDriver does: a JSON object with a "hello" member; anything else is an old driver with no hello);
// the rest is the answer to the request with id "fuzz" (seeds use that id; another id is the wrong_id path).
// Without a newline the whole input is the answer and there is no hello.
//
// Contract under test, for any input bytes:
//   - parse_driver_answer() never throws: every malformed answer is a Failure ("garbage", "wrong_id");
//     a Failure names its category and says why, an Unsupported answer names a non-empty feature;
//   - capabilities_from_hello() returns Capabilities or throws JsonError; for a hello it accepts,
//     announced_fields() (what the answers are then held to) equals the capabilities' "observes";
//     exclude_unsupported() and resolved_zero_grad_default_none() do not throw on accepted capabilities;
//   - an accepted trace survives its writer: trace_to_json(t) re-reads and writes back to the same document;
//   - no sanitizer finding.
// Not reachable from text: the hello *line* checks inside ExternalDriver::start() (id, name, version,
// protocol), which are private to the process handling; this target reads the "hello" object only.
//
// Run (build with -DLOCKSTEP_FUZZ=ON and Clang; seeds from fuzz/seed_corpus.sh):
//   fuzz/seed_corpus.sh /tmp/lockstep-seeds
//   mkdir -p fuzz/corpus/driver_answer
//   build-sanitize/fuzz/fuzz_driver_answer -max_len=65536 -dict=fuzz/lockstep.dict fuzz/corpus/driver_answer /tmp/lockstep-seeds/driver_answer
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program/feature_scope.h"
#include "conformance/program/json_reader.h"
#include "conformance/program/trace_json.h"
#include "conformance/run/capabilities.h"
#include "conformance/run/driver_protocol.h"
#include "fuzz/fuzz_common.h"

namespace {
// The request id the answers are for (fuzz/seed_corpus.sh writes it), and the nesting bound the driver's lines
// are parsed with (conformance/run/driver_protocol.cc; keep in step with it).
const char* const kRequestId = "fuzz";
constexpr int kDriverLineDepth = 512;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text = fuzz::as_text(data, size);
  const size_t newline = text.find('\n');
  const std::string hello_line = newline == std::string::npos ? "" : text.substr(0, newline);
  const std::string answer = newline == std::string::npos ? text : text.substr(newline + 1);

  // The hello, as far as it is a document with a "hello" member.
  std::set<std::string> observes;
  nlohmann::ordered_json hello_doc;
  try {
    hello_doc = parse_json_text(hello_line, kDriverLineDepth);
  } catch (const JsonError&) {
  }
  if (hello_doc.is_object() && hello_doc.contains("hello")) {
    const nlohmann::ordered_json& hello = hello_doc.at("hello");
    observes = announced_fields(hello);
    bool accepted = false;
    Capabilities caps;
    try {
      caps = capabilities_from_hello(hello);
      accepted = true;
    } catch (const JsonError&) {
    }
    if (accepted) {
      if (caps.observes != observes)
        fuzz::fuzz_fail("announced_fields() and capabilities_from_hello() disagree on \"observes\"", hello.dump());
      FeatureScope scope;
      exclude_unsupported(caps, scope);
      (void)resolved_zero_grad_default_none(caps, false);
      (void)resolved_zero_grad_default_none(caps, true);
    }
  }

  // The answer: never an exception.
  const DriverOutcome out = parse_driver_answer(answer, kRequestId, observes);
  switch (out.kind) {
    case DriverOutcome::Kind::Failure:
      if (out.failure_category.empty() || out.failure.empty())
        fuzz::fuzz_fail("a Failure without a category or a message", out.failure_category + ": " + out.failure);
      break;
    case DriverOutcome::Kind::Unsupported:
      if (out.feature.empty()) fuzz::fuzz_fail("an Unsupported answer with an empty feature name");
      break;
    case DriverOutcome::Kind::Trace: {
      // The trace reader's round trip.
      const std::string first = trace_to_json(out.trace).dump();
      Trace again;
      try {
        again = trace_from_json(parse_json_text(first, kDriverLineDepth));
      } catch (const JsonError& e) {
        fuzz::fuzz_fail("trace_to_json() wrote a trace that does not re-read: " + std::string(e.what()), first);
      }
      const std::string second = trace_to_json(again).dump();
      if (second != first)
        fuzz::fuzz_fail("a trace written, re-read and written again differs", "first:\n" + first + "\nsecond:\n" + second);
      break;
    }
  }
  return 0;
}
