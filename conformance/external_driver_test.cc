// Tests of the driver protocol's transport (external_driver.h): every way a driver can misbehave gives a clear
// per-program failure, and the next program gets a fresh driver.
#include "conformance/external_driver.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "conformance/interpreter.h"
#include "conformance/program_json.h"
#include "conformance/trace_json.h"
#include "impl/engine_adapter.h"

namespace lockstep {
namespace {

using Status = DriverReply::Status;
using namespace std::chrono_literals;

DriverOptions quick(std::chrono::milliseconds timeout = 2000ms) {
  DriverOptions o;
  o.timeout = timeout;
  return o;
}

Program small_program() {
  Program p;
  p.params.push_back({"x", DType::Float64, {3}, {1, 2, 3}});
  p.loss = sum(mul(param("x"), param("x")));
  p.actions = {Action{}, Action{}};
  p.actions[1].kind = ActionKind::Backward;
  validate(p);
  return p;
}

std::string temp_file(const std::string& contents) {
  char name[] = "/tmp/lockstep-driver-test-XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << contents;
  return name;
}

TEST(ExternalDriver, AnswersLineByLineWithOneProcess) {
  ExternalDriver d("while read l; do echo \"got $l\"; done", quick());
  for (int i = 0; i < 3; ++i) {
    DriverReply r = d.request("req" + std::to_string(i));
    ASSERT_EQ(r.status, Status::Line) << r.detail;
    EXPECT_EQ(r.line, "got req" + std::to_string(i));
  }
  EXPECT_EQ(d.starts(), 1);
}

TEST(ExternalDriver, CrashIsAFailureNamingTheExitStatusAndTheNextRequestRestarts) {
  ExternalDriver d("read l; echo 'dying' >&2; exit 3", quick());
  DriverReply r = d.request("a");
  EXPECT_EQ(r.status, Status::Exited);
  EXPECT_NE(r.detail.find("exited with status 3"), std::string::npos) << r.detail;
  EXPECT_NE(r.stderr_excerpt.find("dying"), std::string::npos);
  r = d.request("b");
  EXPECT_EQ(r.status, Status::Exited);
  EXPECT_EQ(d.starts(), 2);
}

TEST(ExternalDriver, KilledBySignalIsNamed) {
  ExternalDriver d("read l; kill -SEGV $$", quick());
  DriverReply r = d.request("a");
  EXPECT_EQ(r.status, Status::Exited);
  EXPECT_NE(r.detail.find("signal 11"), std::string::npos) << r.detail;
}

TEST(ExternalDriver, TooFewLinesIsAFailureForTheUnansweredProgram) {
  // Answers the first request, then exits: the second program fails, the third gets a new process.
  ExternalDriver d("read l; echo first", quick());
  EXPECT_EQ(d.request("1").status, Status::Line);
  DriverReply r = d.request("2");
  EXPECT_EQ(r.status, Status::Exited);
  EXPECT_NE(r.detail.find("after answering 1 program"), std::string::npos) << r.detail;
  EXPECT_EQ(d.request("3").status, Status::Line);
  EXPECT_EQ(d.starts(), 2);
}

TEST(ExternalDriver, HangIsKilledAtTheTimeoutWithItsWholeProcessGroup) {
  ExternalDriver d("sleep 30 & wait", quick(300ms));
  const auto t0 = std::chrono::steady_clock::now();
  DriverReply r = d.request("a");
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, Status::TimedOut);
  EXPECT_NE(r.detail.find("300 ms"), std::string::npos) << r.detail;
  EXPECT_LT(took, 3s);
  EXPECT_FALSE(d.running());
}

TEST(ExternalDriver, DriverThatNeverReadsStdinDoesNotBlockTheHarness) {
  ExternalDriver d("sleep 30", quick(300ms));
  DriverReply r = d.request(std::string(4 << 20, 'x'));  // far more than a pipe buffer
  EXPECT_EQ(r.status, Status::TimedOut);
}

TEST(ExternalDriver, StderrFloodIsAFailure) {
  DriverOptions o = quick();
  o.max_stderr_bytes = 64 << 10;
  ExternalDriver d("yes 'noise noise noise' >&2", o);
  DriverReply r = d.request("a");
  EXPECT_EQ(r.status, Status::StderrFlood);
  EXPECT_LE(r.stderr_excerpt.size(), o.stderr_excerpt_bytes);
  EXPECT_NE(r.stderr_excerpt.find("noise"), std::string::npos);
}

TEST(ExternalDriver, ModestStderrIsKeptAndTheAnswerStillCounts) {
  ExternalDriver d("while read l; do echo 'debug output' >&2; echo ok; done", quick());
  DriverReply r = d.request("a");
  ASSERT_EQ(r.status, Status::Line);
  EXPECT_EQ(r.line, "ok");
  EXPECT_NE(r.stderr_excerpt.find("debug output"), std::string::npos);
}

TEST(ExternalDriver, EndlessLineIsCutOff) {
  DriverOptions o = quick(5000ms);
  o.max_answer_bytes = 1 << 20;
  ExternalDriver d("read l; tr '\\0' a < /dev/zero", o);
  DriverReply r = d.request("a");
  EXPECT_EQ(r.status, Status::LineTooLong);
}

TEST(ExternalDriver, MissingCommandFailsClearly) {
  ExternalDriver d("/nonexistent/driver --flag", quick());
  DriverReply r = d.request("a");
  EXPECT_EQ(r.status, Status::Exited);
  EXPECT_NE(r.detail.find("status 127"), std::string::npos) << r.detail;
  EXPECT_NE(r.stderr_excerpt.find("nonexistent"), std::string::npos) << r.stderr_excerpt;
}

// --- The protocol on top ---------------------------------------------------------------------------------

TEST(DriverProtocol, RequestLineHoldsIdAndProgram) {
  nlohmann::ordered_json pj = program_to_json(small_program());
  std::string line = driver_request_line("case-1", pj);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto doc = nlohmann::ordered_json::parse(line);
  EXPECT_EQ(doc["id"], "case-1");
  EXPECT_EQ(doc["program"], pj);
}

TEST(DriverProtocol, ParsesATraceAnswer) {
  Program p = small_program();
  auto engine = make_impl_engine();
  Trace t = run_program(p, *engine);
  nlohmann::ordered_json answer;
  answer["id"] = "c";
  answer["trace"] = trace_to_json(t);
  DriverOutcome out = parse_driver_answer(answer.dump(), "c");
  ASSERT_EQ(out.kind, DriverOutcome::Kind::Trace) << out.failure;
  EXPECT_EQ(out.trace.records.size(), 2u);
}

TEST(DriverProtocol, ParsesUnsupported) {
  DriverOutcome out = parse_driver_answer(R"({"id": "c", "unsupported": "amsgrad"})", "c");
  ASSERT_EQ(out.kind, DriverOutcome::Kind::Unsupported);
  EXPECT_EQ(out.feature, "amsgrad");
}

TEST(DriverProtocol, GarbageNamesTheProblem) {
  struct Case {
    const char* line;
    const char* category;
    const char* mentions;
  } cases[] = {
      {"not json at all", "garbage", "not JSON"},
      {"[1, 2]", "garbage", "expected an object"},
      {R"({"id": "c"})", "garbage", "exactly one of"},
      {R"({"id": "c", "trace": {}, "unsupported": "x"})", "garbage", "exactly one of"},
      {R"({"id": "c", "unsupported": ""})", "garbage", "/unsupported"},
      {R"({"id": "c", "trace": {"engine": "e", "init": 3, "records": []}})", "garbage", "/trace/init"},
      {R"({"id": "c", "unsupported": "x", "extra": 1})", "garbage", "/extra"},
      {R"({"id": "other", "unsupported": "x"})", "wrong_id", "out of step"},
  };
  for (const Case& c : cases) {
    DriverOutcome out = parse_driver_answer(c.line, "c");
    EXPECT_EQ(out.kind, DriverOutcome::Kind::Failure) << c.line;
    EXPECT_EQ(out.failure_category, c.category) << c.line;
    EXPECT_NE(out.failure.find(c.mentions), std::string::npos) << c.line << " -> " << out.failure;
  }
}

TEST(DriverProtocol, EndToEndWithAScriptedDriverAndRestartAfterGarbage) {
  // A driver that answers a canned trace for id "c", then garbage, then the canned trace again.
  Program p = small_program();
  auto engine = make_impl_engine();
  nlohmann::ordered_json answer;
  answer["id"] = "c";
  answer["trace"] = trace_to_json(run_program(p, *engine));
  const std::string file = temp_file(answer.dump() + "\n");
  ExternalDriver d("read l; cat " + file + "; read l; echo garbage; read l; cat " + file, quick());
  nlohmann::ordered_json pj = program_to_json(p);
  EXPECT_EQ(run_on_driver(d, "c", pj).kind, DriverOutcome::Kind::Trace);
  DriverOutcome bad = run_on_driver(d, "c", pj);
  EXPECT_EQ(bad.kind, DriverOutcome::Kind::Failure);
  EXPECT_EQ(bad.failure_category, "garbage");
  EXPECT_FALSE(d.running());  // killed: it may be out of step
  // The fresh process starts the script again from its first answer.
  EXPECT_EQ(run_on_driver(d, "c", pj).kind, DriverOutcome::Kind::Trace);
  EXPECT_EQ(d.starts(), 2);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace lockstep
