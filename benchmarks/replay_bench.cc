// Benchmarks of fixture replay (issue: "replaying the whole corpus on impl in-process <= 2 s; the protocol's
// own overhead <= 1 ms per program beyond the driver's work, measured with the impl driver").
//
//   build/benchmarks/conformance_bench --benchmark_filter=Replay
//
// BM_ReplayCorpusInProcess:  the whole shipped corpus on impl, in-process (load excluded; one iteration = corpus).
// BM_ReplayCorpusImplDriver: the same through the driver protocol with tools/impl_driver (found next to the
//                            build's binaries, or $LOCKSTEP_IMPL_DRIVER). per_program_overhead_us = its time per
//                            program minus the in-process time per program: JSON both ways and the pipe.
// BM_DriverRoundTripEcho:    the pipe alone: one request line to `cat` and back, per program of the corpus.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "conformance/generate/generators.h"
#include "conformance/run/driver_protocol.h"
#include "conformance/run/fixture.h"
#include "conformance/run/replay.h"
#include "conformance/run/tested_implementation.h"
#include "impl/engine_adapter.h"
#include "oracle/torch_bench.h"
#include "oracle/torch_engine.h"
#include "conformance/program/file_system.h"

namespace lockstep {
namespace {

const std::vector<Fixture>& corpus() {
  static const std::vector<Fixture> fixtures = load_fixtures(default_fixtures_dir());
  return fixtures;
}

std::string impl_driver_path() {
  if (const char* env = std::getenv("LOCKSTEP_IMPL_DRIVER")) return env;
  const std::string self = files::executable_path();
  for (std::string dir = files::parent_path(self); !dir.empty() && dir != "/"; dir = files::parent_path(dir)) {
    const std::string candidate = files::join(dir, "lockstep-impl-driver");
    if (files::exists(candidate)) return candidate;
  }
  return "";
}

double in_process_seconds_per_program() {
  static double value = [] {
    ReplayConfig config;
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 5; ++rep)
      for (const Fixture& f : corpus()) replay_in_process(f, [] { return make_impl_engine(); }, config);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5 / corpus().size();
  }();
  return value;
}

void BM_ReplayCorpusInProcess(benchmark::State& state) {
  ReplayConfig config;
  int failed = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Fixture& f : corpus())
      failed += replay_in_process(f, [] { return make_impl_engine(); }, config).status != ReplayStatus::Passed;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (failed) state.SkipWithError("impl failed fixtures");
  state.counters["fixtures"] = static_cast<double>(corpus().size());
  state.counters["per_program_us"] = seconds / static_cast<double>(state.iterations()) / corpus().size() * 1e6;
}
BENCHMARK(BM_ReplayCorpusInProcess)->Unit(benchmark::kMillisecond);

void BM_ReplayCorpusImplDriver(benchmark::State& state) {
  const std::string path = impl_driver_path();
  if (path.empty()) {
    state.SkipWithError("lockstep-impl-driver not found (set LOCKSTEP_IMPL_DRIVER)");
    return;
  }
  ExternalDriver driver(path);
  ReplayConfig config;
  int failed = 0;
  replay_on_driver(corpus().front(), driver, config);  // start the process outside the timing
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Fixture& f : corpus()) failed += replay_on_driver(f, driver, config).status != ReplayStatus::Passed;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (failed) state.SkipWithError("the impl driver failed fixtures");
  const double per_program = seconds / static_cast<double>(state.iterations()) / corpus().size();
  state.counters["per_program_us"] = per_program * 1e6;
  state.counters["per_program_overhead_us"] = (per_program - in_process_seconds_per_program()) * 1e6;
  state.counters["driver_starts"] = driver.starts();
}
BENCHMARK(BM_ReplayCorpusImplDriver)->Unit(benchmark::kMillisecond);

// Random programs against LibTorch through the impl driver (the path every external implementation takes):
// the oracle in-process, the program over the protocol, the traces compared with the error budget.
void BM_RandomProgramsImplDriver(benchmark::State& state) {
  const std::string path = impl_driver_path();
  if (path.empty()) {
    state.SkipWithError("lockstep-impl-driver not found (set LOCKSTEP_IMPL_DRIVER)");
    return;
  }
  torch_set_num_threads(1);
  GenOptions gen;
  gen.max_size = 30;
  RandomPrograms programs(1, gen);
  std::vector<Program> batch;
  for (int i = 0; i < 200; ++i) batch.push_back(programs.at(static_cast<uint64_t>(i)).value());
  auto subject = driver_implementation([] { return make_torch_engine(); }, path, DriverOptions{}, Tolerance{});
  subject->run("warm-up", batch.front());  // start the process outside the timing
  int64_t failed = 0, done = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < batch.size(); ++i) failed += subject->run("random-" + std::to_string(i), batch[i]).passed ? 0 : 1;
    done += static_cast<int64_t>(batch.size());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["programs_per_second"] = done / seconds;
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_RandomProgramsImplDriver)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_DriverRoundTripEcho(benchmark::State& state) {
  ExternalDriver driver("cat");
  std::vector<std::string> lines;
  for (const Fixture& f : corpus()) lines.push_back(driver_request_line(f.id, f.program_json));
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& l : lines) benchmark::DoNotOptimize(driver.request(l));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["per_program_us"] = seconds / static_cast<double>(state.iterations()) / lines.size() * 1e6;
}
BENCHMARK(BM_DriverRoundTripEcho)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lockstep

BENCHMARK_MAIN();
