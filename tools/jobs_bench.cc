// Programs per second of `lockstep run` at --jobs 1 and 2 (issue 15): the built binary, the default run's programs
// (seed 1, max size 30, the named cases first), in lockstep mode with impl and through lockstep-impl-driver. Wall
// time of the whole command (start, workers, merging the reports, writing them): what a user waits for.
//
//   build/tools/jobs_bench                      # four rows; docs/benchmarks.md "All cores" divides jobs:2 by jobs:1
//   build/tools/jobs_bench --benchmark_filter=Lockstep/10000/2
#include <sys/wait.h>
#include <unistd.h>
#include "conformance/program/file_system.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace {

// Runs `lockstep run` with `args` and --report-dir in a temporary directory; false when it did not exit 0.
bool run_lockstep(const std::vector<std::string>& args) {
  const std::string dir = lockstep::files::join(lockstep::files::temp_directory(), "lockstep-jobs-bench-" + std::to_string(getpid()));
  std::vector<std::string> all = {LOCKSTEP_BINARY, "run"};
  all.insert(all.end(), args.begin(), args.end());
  all.insert(all.end(), {"--report-dir", dir});
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  lockstep::files::remove_all(dir);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void run_bench(benchmark::State& state, const std::string& engine) {
  const int64_t count = state.range(0);
  const std::string jobs = std::to_string(state.range(1));
  for (auto _ : state)
    if (!run_lockstep({"--engine", engine, "--count", std::to_string(count), "--jobs", jobs}))
      state.SkipWithError("lockstep run did not pass");
  state.SetItemsProcessed(state.iterations() * count);
  state.counters["jobs"] = static_cast<double>(state.range(1));
}

void Lockstep(benchmark::State& state) { run_bench(state, "impl"); }
void ImplDriver(benchmark::State& state) { run_bench(state, IMPL_DRIVER); }

BENCHMARK(Lockstep)->Args({10000, 1})->Args({10000, 2})->UseRealTime()->Unit(benchmark::kSecond)->Iterations(3);
BENCHMARK(ImplDriver)->Args({5000, 1})->Args({5000, 2})->UseRealTime()->Unit(benchmark::kSecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
