// The command line as a user meets it: exit codes, messages that name the file and the JSON pointer,
// outputs, reports. Runs the built `lockstep` binary.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  std::string cmd = std::string(LOCKSTEP_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string source(const std::string& rel) { return std::string(LOCKSTEP_SOURCE_DIR) + "/" + rel; }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Cli, HelpExitsZeroAndListsSubcommands) {
  Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"run", "trace", "replay", "fixtures"}) EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run("").exit_code, 2);
  EXPECT_EQ(run("frobnicate").exit_code, 2);
  EXPECT_EQ(run("run --count -3").exit_code, 2);
  EXPECT_EQ(run("run --max-size 101").exit_code, 2);
  EXPECT_EQ(run("trace").exit_code, 2);
  EXPECT_EQ(run("trace x.json --engine pytorch").exit_code, 2);
}

// Every bad program file: exit 2, one message naming the file and the JSON pointer, nothing on stdout but it.
TEST(Cli, BadProgramsNameTheFileAndPointer) {
  // The same list of files and pointers as conformance/program/program_json_test.cc.
  const nlohmann::json expected =
      nlohmann::json::parse(read_file(source("conformance/testdata/bad/expected_pointers.json")));
  std::vector<std::pair<std::string, std::string>> cases;
  for (const auto& [name, pointer] : expected.at("files").items()) {
    // invalid JSON has no pointer: its message names the line.
    cases.emplace_back(name, pointer.get<std::string>().empty() ? "line 3" : pointer.get<std::string>());
  }
  ASSERT_GE(cases.size(), 20u);
  for (const auto& [file, pointer] : cases) {
    std::string path = source("conformance/testdata/bad/" + file);
    for (const char* engine : {"oracle", "impl"}) {
      Result r = run("trace " + path + " --engine " + engine);
      EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.out;
      EXPECT_NE(r.out.find(path), std::string::npos) << file << ": message does not name the file:\n" << r.out;
      EXPECT_NE(r.out.find(pointer), std::string::npos) << file << ": message does not name " << pointer << ":\n"
                                                        << r.out;
      EXPECT_EQ(r.out.find("c10::Error"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
    }
  }
}

TEST(Cli, MissingProgramFileExitsTwo) {
  Result r = run("trace /nonexistent/p.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("/nonexistent/p.json"), std::string::npos) << r.out;
}

TEST(Cli, TracePrintsJsonWithARecordPerAction) {
  std::string path = source("conformance/cases/tut003-repeated-backward-accumulates.json");
  fs::path dir = temp_dir("trace");
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  std::ofstream(dir / "p.json") << c["program"].dump();
  for (const char* engine : {"oracle", "impl"}) {
    Result r = run("trace " + (dir / "p.json").string() + " --engine " + engine + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    nlohmann::json t = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    ASSERT_EQ(t["records"].size(), c["program"]["actions"].size());
    EXPECT_EQ(t["records"][9]["params"]["x"]["grad"]["values"], nlohmann::json::parse("[10, 20, 30]")) << engine;
  }
  Result table = run("trace " + (dir / "p.json").string() + " --table 2>/dev/null");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("#9 backward"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("grad [10, 20, 30]"), std::string::npos) << table.out;
}

TEST(Cli, RunNamedCasesOnBothEngines) {
  fs::path dir = temp_dir("named");
  for (const char* engine : {"oracle", "impl"}) {
    Result r = run(std::string("run --engine ") + engine + " --count 0 --report-dir " + dir.string());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("named cases"), std::string::npos) << r.out;
  }
}

TEST(Cli, UnknownNamedCaseExitsTwo) {
  EXPECT_EQ(run("run --count 0 --case no-such-case").exit_code, 2);
}

// The same seed gives byte-identical reports; the JUnit report is written; no temporary files are left.
TEST(Cli, SameSeedSameReportBytes) {
  fs::path a = temp_dir("seed-a"), b = temp_dir("seed-b");
  Result ra = run("run --engine impl --count 200 --seed 99 --report-dir " + a.string());
  Result rb = run("run --engine impl --count 200 --seed 99 --report-dir " + b.string());
  ASSERT_EQ(ra.exit_code, rb.exit_code) << ra.out << rb.out;
  for (const char* f : {"lockstep-report.md", "lockstep-report.json", "lockstep-report.xml"}) {
    ASSERT_TRUE(fs::exists(a / f)) << f;
    EXPECT_EQ(read_file(a / f), read_file(b / f)) << f;
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(a)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 3u) << "temporary files left behind";
}

// A driver that cannot start ends the run once, quickly, with exit 2, its stderr, and no report; not one
// failure per fixture (fixtures/PROTOCOL.md section 2a).
TEST(Cli, DriverThatCannotStartStopsTheRunOnce) {
  fs::path dir = temp_dir("startup");
  const auto t0 = std::chrono::steady_clock::now();
  Result r = run("replay --fixtures " + source("fixtures/corpus") +
                 " --engine 'sh -c \"echo boom >&2; exit 3\"' --report-dir " + dir.string());
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("boom"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed to start"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 3"), std::string::npos) << r.out;  // names the command
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;     // no per-case failures
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_TRUE(fs::is_empty(dir)) << "a report was written";

  Result live = run("run --engine 'sh -c \"echo boom >&2; exit 3\"' --count 20 --report-dir " + dir.string());
  EXPECT_EQ(live.exit_code, 2) << live.out;
  EXPECT_NE(live.out.find("boom"), std::string::npos) << live.out;
  EXPECT_EQ(live.out.find("FAIL"), std::string::npos) << live.out;
  EXPECT_TRUE(fs::is_empty(dir)) << "a report was written";
}

}  // namespace
