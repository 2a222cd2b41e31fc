// The command line as a user meets it: exit codes, messages that name the file and the JSON pointer,
// outputs, reports. Runs the built `lockstep` binary.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "conformance/program/file_system.h"
#include "conformance/program/data_dir.h"

namespace {

namespace files = lockstep::files;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// A shell command line, stdout and stderr together.
Result run_shell(const std::string& command) {
  std::string cmd = command + " 2>&1";
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

Result run(const std::string& args) { return run_shell(std::string(LOCKSTEP_BINARY) + " " + args); }

std::string source(const std::string& rel) { return lockstep::source_dir() + "/" + rel; }

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& name) {
  std::string d = files::process_temp_dir() + "/" + name;  // removed at exit
  files::remove_all(d);
  files::create_directories(d);
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
  std::string dir = temp_dir("trace");
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  std::ofstream(dir + "/p.json") << c["program"].dump();
  for (const char* engine : {"oracle", "impl"}) {
    Result r = run("trace " + (dir + "/p.json") + " --engine " + engine + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    nlohmann::json t = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    ASSERT_EQ(t["records"].size(), c["program"]["actions"].size());
    EXPECT_EQ(t["records"][9]["params"]["x"]["grad"]["values"], nlohmann::json::parse("[10, 20, 30]")) << engine;
  }
  Result table = run("trace " + (dir + "/p.json") + " --table 2>/dev/null");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("#9 backward"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("grad [10, 20, 30]"), std::string::npos) << table.out;
}

TEST(Cli, RunNamedCasesOnBothEngines) {
  std::string dir = temp_dir("named");
  for (const char* engine : {"oracle", "impl"}) {
    Result r = run(std::string("run --engine ") + engine + " --count 0 --report-dir " + dir);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("named cases"), std::string::npos) << r.out;
  }
}

TEST(Cli, UnknownNamedCaseExitsTwo) {
  EXPECT_EQ(run("run --count 0 --case no-such-case").exit_code, 2);
}

// The same seed gives byte-identical reports; the JUnit report is written; no temporary files are left.
TEST(Cli, SameSeedSameReportBytes) {
  std::string a = temp_dir("seed-a"), b = temp_dir("seed-b");
  Result ra = run("run --engine impl --count 200 --seed 99 --report-dir " + a);
  Result rb = run("run --engine impl --count 200 --seed 99 --report-dir " + b);
  ASSERT_EQ(ra.exit_code, rb.exit_code) << ra.out << rb.out;
  for (const char* f : {"lockstep-report.md", "lockstep-report.json", "lockstep-report.xml"}) {
    ASSERT_TRUE(files::exists(a + "/" + f)) << f;
    EXPECT_EQ(read_file(a + "/" + f), read_file(b + "/" + f)) << f;
  }
  EXPECT_EQ(files::list_names(a).size(), 3u) << "temporary files left behind";
}

// A driver that cannot start ends the run once, quickly, with exit 2, its stderr, and no report; not one
// failure per fixture (fixtures/PROTOCOL.md section 2a).
TEST(Cli, DriverThatCannotStartStopsTheRunOnce) {
  std::string dir = temp_dir("startup");
  Result r = run("replay --fixtures " + source("fixtures/corpus") +
                 " --engine 'sh -c \"echo boom >&2; exit 3\"' --report-dir " + dir);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("boom"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed to start"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 3"), std::string::npos) << r.out;  // names the command
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;     // no per-case failures
  // Once: the driver was started once, not again per fixture (counted, not timed: a loaded machine may be slow).
  size_t said = 0;
  for (size_t at = r.out.find("failed to start"); at != std::string::npos; at = r.out.find("failed to start", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << r.out;
  EXPECT_TRUE(files::is_empty_directory(dir)) << "a report was written";

  Result live = run("run --engine 'sh -c \"echo boom >&2; exit 3\"' --count 20 --report-dir " + dir);
  EXPECT_EQ(live.exit_code, 2) << live.out;
  EXPECT_NE(live.out.find("boom"), std::string::npos) << live.out;
  EXPECT_EQ(live.out.find("FAIL"), std::string::npos) << live.out;
  EXPECT_TRUE(files::is_empty_directory(dir)) << "a report was written";
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Reproduce lines reproduce: the command a report prints for a failure, executed as a user would, fails
// again at the same action and field. In-process and through a driver.

struct FirstFailure {
  std::string id, reproduce, path;
  int64_t action_index = -1;
  bool has_program = false, has_driver_stderr = false;
};

FirstFailure first_failure(const std::string& report, bool random_only) {
  nlohmann::json j = nlohmann::json::parse(read_file(report));
  for (const auto& c : j.at("cases")) {
    if (c.at("status") != "failed") continue;
    const std::string id = c.at("id");
    if (random_only && id.rfind("random-", 0) != 0) continue;
    const auto& f = c.at("failure");
    FirstFailure out;
    out.id = id;
    out.reproduce = f.at("reproduce");
    out.action_index = f.at("action_index").is_null() ? -1 : f.at("action_index").get<int64_t>();
    out.path = f.at("differences").empty() ? "" : f.at("differences")[0].at("path").get<std::string>();
    out.has_program = f.contains("program");
    out.has_driver_stderr = f.contains("driver_stderr");
    return out;
  }
  return {};
}

// Runs `reproduce` ("lockstep run ...") with the built binary, reports into `dir`.
Result run_reproduce_line(const std::string& reproduce, const std::string& dir) {
  const std::string prefix = "lockstep ";
  EXPECT_EQ(reproduce.rfind(prefix, 0), 0u) << reproduce;
  return run(reproduce.substr(prefix.size()) + " --report-dir " + dir);
}

void expect_reproduces(const std::string& engine, const std::string& name) {
  std::string d = temp_dir(name);
  Result r = run("run --engine " + engine + " --count 40 --seed 2 --shrink-seconds 2 --report-dir " + d);
  ASSERT_EQ(r.exit_code, 1) << r.out;
  for (bool random_only : {false, true}) {
    FirstFailure f = first_failure(d + "/lockstep-report.json", random_only);
    ASSERT_FALSE(f.id.empty()) << "no failure in the report";
    EXPECT_TRUE(f.has_program) << f.id;
    if (engine.find("--focus") != std::string::npos && f.id.rfind("random-", 0) == 0)  // a named case's line has none
      EXPECT_NE(f.reproduce.find(" --focus"), std::string::npos) << f.reproduce;
    if (random_only) {
      EXPECT_NE(f.reproduce.find("--index"), std::string::npos) << f.reproduce;
      EXPECT_EQ(f.reproduce.find("--count"), std::string::npos) << "the reproduce line runs one program: " << f.reproduce;
    }
    std::string again = d + "/" + (random_only ? "again-random" : "again-first");
    Result rr = run_reproduce_line(f.reproduce, again);
    EXPECT_EQ(rr.exit_code, 1) << f.reproduce << "\n" << rr.out;
    FirstFailure g = first_failure(again + "/lockstep-report.json", random_only);
    EXPECT_EQ(g.id, f.id) << f.reproduce;
    EXPECT_EQ(g.action_index, f.action_index) << f.reproduce;
    EXPECT_EQ(g.path, f.path) << f.reproduce;
    nlohmann::json j = nlohmann::json::parse(read_file(again + "/lockstep-report.json"));
    EXPECT_EQ(j.at("cases").size(), 1u) << "the reproduce line runs just the failing case: " << f.reproduce;
  }
  files::remove_all(d);
}

TEST(Cli, ReproduceLinesReproduceInProcess) { expect_reproduces("impl --mutant adam_eps_inside_sqrt", "repro-inproc"); }

TEST(Cli, ReproduceLinesReproduceThroughADriver) {
  expect_reproduces(std::string("'") + IMPL_DRIVER + " --mutant adam_eps_inside_sqrt'", "repro-driver");
}

// A named case's broken claims reach the report in their own field, with the claim and its SEMANTICS sections, in
// process and through a driver (the driver's trace of the comparison is the one checked).
TEST(Cli, BrokenClaimsOfANamedCaseAreReportedWithTheirSections) {
  for (const std::string engine : {std::string("impl --mutant sgd_velocity_form"),
                                   std::string("'") + IMPL_DRIVER + " --mutant sgd_velocity_form'"}) {
    const std::string d = temp_dir("claims");
    Result r = run("run --engine " + engine + " --case sem5-lr-zero-still-updates-state --report-dir " + d);
    ASSERT_EQ(r.exit_code, 1) << r.out;
    const nlohmann::json j = nlohmann::json::parse(read_file(d + "/lockstep-report.json"));
    ASSERT_EQ(j.at("cases").size(), 1u) << engine;
    const nlohmann::json& f = j.at("cases")[0].at("failure");
    ASSERT_TRUE(f.contains("claim_failures")) << engine << "\n" << f.dump(2);
    EXPECT_EQ(f.at("claim_failures")[0].at("semantics"), nlohmann::json::array({"SEM-5.3", "SEM-6.3"})) << engine;
    EXPECT_NE(f.at("claim_failures")[0].at("check").get<std::string>().find("momentum_buffer"), std::string::npos);
    EXPECT_FALSE(f.contains("engine_failure")) << engine;
    EXPECT_NE(read_file(d + "/lockstep-report.md").find("Claim broken (SEM-5.3, SEM-6.3)"), std::string::npos) << engine;
    files::remove_all(d);
  }
}

// A focused scope's programs are other programs than the scope's alone: the reproduce line carries --focus.
TEST(Cli, ReproduceLinesOfAFocusedScopeReproduce) {
  const std::string engine = "impl --mutant softplus_grad_sign_flipped --features op:softplus,op:sum,op:mean --focus";
  expect_reproduces(engine, "repro-focus");
}

TEST(Cli, IndexRunsThatProgramWhateverCountSays) {
  std::string d = temp_dir("index");
  Result r = run("run --engine impl --index 17 --report-dir " + d);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(d + "/lockstep-report.json"));
  ASSERT_EQ(j.at("cases").size(), 1u);
  EXPECT_EQ(j.at("cases")[0].at("id"), "random-17");
  files::remove_all(d);
}

TEST(Cli, DefaultRunChecksImplAgainstLibTorch) {
  std::string d = temp_dir("default");
  Result r = run("run --count 5 --report-dir " + d);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("impl against libtorch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(lockstep mode)"), std::string::npos) << r.out;
  files::remove_all(d);
}

// A live driver run's report holds the shrunk program, the driver's stderr and the first differing field.
TEST(Cli, DriverFailureReportHasShrunkProgramAndDriverStderr) {
  std::string d = temp_dir("driver-report");
  // A driver that logs every request on stderr (while the request is pending), then answers through impl.
  const std::string script = d + "/noisy-driver.sh";
  {
    std::ofstream out(script);
    out << "while IFS= read -r line; do echo 'noisy driver: working on a request' >&2; printf '%s\\n' \"$line\"; done | "
        << IMPL_DRIVER << " --mutant adam_eps_inside_sqrt\n";
  }
  const std::string driver = "'sh " + script + "'";
  Result r = run("run --engine " + driver + " --count 30 --seed 2 --shrink-seconds 2 --report-dir " + d);
  ASSERT_EQ(r.exit_code, 1) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(d + "/lockstep-report.json"));
  bool seen = false;
  for (const auto& c : j.at("cases")) {
    if (c.at("status") != "failed" || c.at("id").get<std::string>().rfind("random-", 0) != 0) continue;
    const auto& f = c.at("failure");
    EXPECT_TRUE(f.contains("program"));
    EXPECT_TRUE(f.contains("original_program"));
    EXPECT_FALSE(f.at("differences").empty());
    ASSERT_TRUE(f.contains("driver_stderr"));
    EXPECT_NE(f.at("driver_stderr").get<std::string>().find("noisy driver: working on a request"), std::string::npos);
    seen = true;
    break;
  }
  EXPECT_TRUE(seen) << "no random program failed";
  EXPECT_EQ(j.at("mode"), "free-running");
  files::remove_all(d);
}

namespace {

// `lockstep matrix` on reports a real run wrote: the pages appear; a report that does not read is exit 2 naming
// the file and pointer, and leaves the previous pages as they were; --strict fails on unexplained failures.
TEST(Cli, MatrixFromRealReportsAndBadOnes) {
  const std::string dir = temp_dir("matrix");
  Result r = run("run --mutant zero_grad_noop --count 20 --shrink-seconds 0 --report-dir " + (dir + "/run"));
  ASSERT_EQ(r.exit_code, 1) << r.out;
  const std::string report = (dir + "/run/lockstep-report.json");
  r = run("matrix --out-dir " + (dir + "/m") + " " + report);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("impl+zero_grad_noop:"), std::string::npos) << r.out;
  const std::string html = read_file(dir + "/m/conformance-matrix.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(read_file(dir + "/m/conformance-matrix.md").find("| impl+zero_grad_noop |"), std::string::npos);
  EXPECT_EQ(run("matrix --strict --out-dir " + (dir + "/m") + " " + report).exit_code, 1);

  std::ofstream(dir + "/bad.json") << "{\"format\": \"lockstep-report/1\", \"under_test\": \"x\", \"cases\": [{\"id\": 1}]}";
  r = run("matrix --out-dir " + (dir + "/m") + " " + (dir + "/bad.json"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/cases/0/id"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(dir + "/m/conformance-matrix.html"), html);  // untouched
  files::remove_all(dir);
}

}  // namespace

namespace {

// --- The newcomer's path (issue 30) ------------------------------------------------------------------------

// `lockstep ARGS` run in `dir` (where reports go by default).
Result run_in(const std::string& dir, const std::string& args) {
  return run_shell("cd '" + dir + "' && '" + LOCKSTEP_BINARY + "' " + args);
}

TEST(Cli, MistypedSubcommandsAndFlagsGetTheNearestName) {
  Result r = run("rnu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("'rnu' is no subcommand: did you mean 'run'?"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("A subcommand is required"), std::string::npos) << r.out;
  r = run("run --cout 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("'--cout' is no flag of 'run': did you mean '--count'?"), std::string::npos) << r.out;
  r = run("replay --exclude-feature adam");
  EXPECT_NE(r.out.find("did you mean '--exclude-features'?"), std::string::npos) << r.out;
  r = run("fixtures generat");
  EXPECT_NE(r.out.find("did you mean 'generate'?"), std::string::npos) << r.out;
  r = run("zzzzzzzz");  // nothing near: the subcommands are listed, no guess
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("subcommands: run"), std::string::npos) << r.out;
}

// A driver author's own per-action table: the impl driver's trace equals impl's in-process, and a mutant through
// the driver differs from impl exactly as the in-process mutant does.
TEST(Cli, TraceRunsADriverCommand) {
  const std::string d = temp_dir("trace-driver");
  const std::string program = d + "/program.json";
  // zero_grad spelled out: impl in-process and the impl driver may follow different versions' zero_grad() default
  // (the driver declares the oracle's build's, SEMANTICS 12.6).
  nlohmann::json p = nlohmann::json::parse(read_file(source("conformance/cases/tut002-momentum-buffer-first-step-copy.json")))["program"];
  for (auto& a : p["actions"])
    if (a["action"] == "zero_grad" && !a.contains("set_to_none")) a["set_to_none"] = false;
  std::ofstream(program) << p.dump();
  auto body = [](const std::string& table) { return table.substr(table.find('\n') + 1); };  // past "engine: ..."
  Result in_process = run("trace " + program + " --engine impl --table");
  Result driver = run("trace " + program + " --engine '" + IMPL_DRIVER + "' --table");
  ASSERT_EQ(in_process.exit_code, 0) << in_process.out;
  ASSERT_EQ(driver.exit_code, 0) << driver.out;
  EXPECT_EQ(body(driver.out), body(in_process.out));
  Result mutant = run("trace " + program + " --engine impl --mutant sgd_velocity_form --table");
  Result mutant_driver = run("trace " + program + " --engine '" + IMPL_DRIVER + " --mutant sgd_velocity_form' --table");
  ASSERT_EQ(mutant.exit_code, 0) << mutant.out;
  EXPECT_NE(body(mutant.out), body(in_process.out));
  EXPECT_EQ(body(mutant_driver.out), body(mutant.out));
  Result missing = run("trace " + program + " --engine 'no-such-command-xyz'");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("127"), std::string::npos) << missing.out;
  std::ofstream(d + "/declines.py") << "import json, sys\n"
                                       "for line in sys.stdin:\n"
                                       "    print(json.dumps({'id': json.loads(line)['id'], 'unsupported': 'everything'}), flush=True)\n";
  Result declined = run("trace " + program + " --engine 'python3 " + d + "/declines.py'");
  files::remove_all(d);
  EXPECT_EQ(declined.exit_code, 1) << declined.out;
  EXPECT_NE(declined.out.find("unsupported 'everything'"), std::string::npos) << declined.out;
}

// replay writes its reports to the working directory like run; a reproduce line writes to lockstep-repro/ID,
// leaving the run's own reports as they were, and a named case's failure prints its reproduce line.
TEST(Cli, ReportsGoToTheWorkingDirectoryAndReproduceLinesToTheirOwn) {
  const std::string d = temp_dir("report-dirs");
  const std::string engine = std::string("'") + IMPL_DRIVER + " --mutant sgd_velocity_form'";
  Result r = run_in(d, "replay --engine " + engine + " --only 'tut002-*'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string report = d + "/replay-report.json";
  ASSERT_TRUE(files::exists(report)) << r.out;
  const std::string before = read_file(report);
  nlohmann::json j = nlohmann::json::parse(before);
  std::string reproduce, id;
  for (const auto& c : j.at("cases"))
    if (c.at("status") == "failed") {
      reproduce = c.at("failure").at("reproduce");
      id = c.at("id");
      break;
    }
  ASSERT_FALSE(reproduce.empty());
  EXPECT_NE(reproduce.find(" --report-dir 'lockstep-repro/" + id + "'"), std::string::npos) << reproduce;
  Result again = run_in(d, reproduce.substr(std::string("lockstep ").size()));
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_TRUE(files::exists(d + "/lockstep-repro/" + id + "/replay-report.json")) << again.out;
  EXPECT_EQ(read_file(report), before);  // the replay's own reports are untouched

  Result named = run("run --engine " + engine + " --count 0 --report-dir " + d + "/run");
  EXPECT_EQ(named.exit_code, 1) << named.out;
  const size_t fail = named.out.find("  FAIL   ");
  ASSERT_NE(fail, std::string::npos) << named.out;
  const size_t line = named.out.find("reproduce: lockstep run ", fail);
  ASSERT_NE(line, std::string::npos) << named.out;
  EXPECT_NE(named.out.find(" --case ", line), std::string::npos) << named.out;
  files::remove_all(d);
}

// A small driver's console: the skips are one line (the report lists them), a mostly skipped run warns, and a
// driver with no hello is held to protocol 1 (no RMSprop, no Adagrad) and told how to declare more.
TEST(Cli, SkipsAreOneLineAndAMostlySkippedRunWarns) {
  const std::string d = temp_dir("skips");
  {
    std::ofstream f(d + "/sgd_only.py");
    // No hello (it answers the hello line as a program: unsupported), then the programs of one float64 parameter
    // through impl's driver.
    f << "import json, subprocess, sys\n"
         "inner = subprocess.Popen([" << "'" << IMPL_DRIVER << "'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
         "for line in sys.stdin:\n"
         "    r = json.loads(line)\n"
         "    params = (r.get('program') or {}).get('params') or []\n"
         "    if len(params) != 1 or params[0]['dtype'] != 'float64':\n"
         "        print(json.dumps({'id': r['id'], 'unsupported': 'one float64 parameter only'}), flush=True)\n"
         "        continue\n"
         "    inner.stdin.write(line); inner.stdin.flush()\n"
         "    print(inner.stdout.readline().strip(), flush=True)\n";
  }
  // Without zero_grad() (no hello: the oracle's default is assumed, the impl driver behind follows its own build's).
  Result r = run("replay --engine 'python3 " + d + "/sgd_only.py' --exclude-features zero_grad_default --report-dir " + d + "/replay");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("  skip "), std::string::npos) << "no line per skipped fixture";
  EXPECT_NE(r.out.find("(the implementation answered unsupported: 'one float64 parameter only' "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixtures were skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held to protocol 1's"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(d + "/replay/replay-report.json"));
  bool rmsprop_left_out = false;
  for (const auto& x : j.at("coverage").at("left_out_cases"))
    if (x.at("id").get<std::string>().find("rmsprop") != std::string::npos) rmsprop_left_out = true;
  EXPECT_TRUE(rmsprop_left_out) << "a protocol-1 driver gets no RMSprop fixture";
  const std::string md = read_file(d + "/replay/replay-report.md");
  EXPECT_NE(md.find("### Skipped"), std::string::npos);
  EXPECT_LT(md.find("**Warning:**"), md.find("### Coverage"));
  Result verbose = run("replay --engine 'python3 " + d + "/sgd_only.py' --verbose --only 'grad-adam*' --report-dir " + d + "/v");
  EXPECT_NE(verbose.out.find("  skip   grad-adam"), std::string::npos) << verbose.out;

  Result live = run("run --engine 'python3 " + d + "/sgd_only.py' --count 20 --seed 3 --report-dir " + d + "/run");
  EXPECT_EQ(live.exit_code, 0) << live.out;
  EXPECT_EQ(live.out.find("known "), std::string::npos) << "one vocabulary: skipped, not known";
  EXPECT_EQ(live.out.find("in scope but not exercised:"), std::string::npos) << "the names are in the report";
  EXPECT_NE(live.out.find("random programs were skipped"), std::string::npos) << live.out;
  files::remove_all(d);
}

// Failures come before coverage in the Markdown report.
TEST(Cli, MarkdownShowsFailuresBeforeCoverage) {
  const std::string d = temp_dir("md-order");
  Result r = run("replay --engine 'impl' --only 'tut002-*' --report-dir " + d + " && " + LOCKSTEP_BINARY +
                 " replay --engine '" + IMPL_DRIVER + " --mutant sgd_velocity_form' --only 'tut002-*' --report-dir " + d);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string md = read_file(d + "/replay-report.md");
  ASSERT_NE(md.find("### Failures"), std::string::npos);
  ASSERT_NE(md.find("### Coverage"), std::string::npos);
  EXPECT_LT(md.find("### Failures"), md.find("### Coverage"));
  files::remove_all(d);
}

// lockstep mutants --oracle: the allclose columns read the driver oracle's trace of the killing program, the one the
// comparison asked it for (TestedImplementation::oracle_trace). With the impl driver as the oracle, maximize ignored is
// caught by allclose too; without that trace the columns would say missed.
TEST(Cli, MutantsAllcloseColumnsReadTheDriverOraclesTrace) {
  const std::string dir = temp_dir("mutants-oracle-allclose");
  Result r = run(std::string("mutants --oracle ") + IMPL_DRIVER + " --only maximize_ignored --paths in-process --count 20 "
                 "--report-dir " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json report = nlohmann::json::parse(read_file(dir + "/mutants-report.json"));
  const nlohmann::json& row = report.at("mutants").at(0);
  EXPECT_EQ(row.at("mutant"), "maximize_ignored");
  const nlohmann::json& in_process = row.at("paths").at("in-process");
  EXPECT_EQ(in_process.at("killed"), true);
  EXPECT_EQ(in_process.at("allclose_shrunk"), "caught") << in_process.dump();
  EXPECT_EQ(in_process.at("allclose_before_shrinking"), "caught") << in_process.dump();
}

}  // namespace
