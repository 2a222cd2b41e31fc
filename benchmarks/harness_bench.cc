// Benchmark of the lockstep harness (issue: "random programs per second on one core, and the harness
// overhead ratio (total time / time spent inside the oracle) in the same run; target overhead <= 1.5x").
//
//   build/benchmarks/conformance_bench --benchmark_filter=Lockstep
//
// One iteration runs a fixed batch of random programs (seed 1, RapidCheck sizes cycling up to max_size) in
// lockstep: the oracle, impl, the comparator and the re-synchronisation. The oracle is wrapped in a timing
// engine, so the time spent inside LibTorch is measured in the same run as the total.
// Counters: programs_per_second, overhead_ratio = total / inside-the-oracle.
#include <benchmark/benchmark.h>

#include <chrono>

#include "conformance/generate/generators.h"
#include "conformance/run/lockstep_runner.h"
#include "impl/engine_adapter.h"
#include "oracle/torch_bench.h"
#include "oracle/torch_engine.h"

namespace lockstep {
namespace {

using Clock = std::chrono::steady_clock;

// Forwards every call to `inner` and adds up the time spent inside it.
class TimedEngine : public Engine {
 public:
  TimedEngine(Engine& inner, double& seconds) : inner_(inner), seconds_(seconds) {}
  std::string name() const override { return inner_.name(); }
  void add_parameter(const ParamSpec& s) override { timed([&] { inner_.add_parameter(s); }); }
  void make_optimizer(const OptimizerSpec& s) override { timed([&] { inner_.make_optimizer(s); }); }
  void forward(const Expr& e, bool no_grad) override { timed([&] { inner_.forward(e, no_grad); }); }
  void backward(const BackwardArgs& a) override { timed([&] { inner_.backward(a); }); }
  void zero_grad(std::optional<bool> set_to_none) override { timed([&] { inner_.zero_grad(set_to_none); }); }
  bool zero_grad_sets_to_none_by_default() const override { return inner_.zero_grad_sets_to_none_by_default(); }
  void set_grad_none(const std::string& p) override { timed([&] { inner_.set_grad_none(p); }); }
  void hold_grad(const std::string& p, const std::string& h) override { timed([&] { inner_.hold_grad(p, h); }); }
  void step() override { timed([&] { inner_.step(); }); }
  void set_group_options(int g, const OptimizerOptions& o) override {
    timed([&] { inner_.set_group_options(g, o); });
  }
  void add_param_group(const ParamGroupSpec& g) override { timed([&] { inner_.add_param_group(g); }); }
  TensorValue clip_grad_norm(const std::vector<std::string>& p, double max_norm, double norm_type,
                             bool error_if_nonfinite) override {
    TensorValue total;
    timed([&] { total = inner_.clip_grad_norm(p, max_norm, norm_type, error_if_nonfinite); });
    return total;
  }
  void clip_grad_value(const std::vector<std::string>& p, double v) override {
    timed([&] { inner_.clip_grad_value(p, v); });
  }
  void state_dict(const std::string& c) override {
    timed([&] { inner_.state_dict(c); });
  }
  void load_state_dict(const std::string& c, bool fresh) override {
    timed([&] { inner_.load_state_dict(c, fresh); });
  }
  EngineState observe() override {
    EngineState s;
    timed([&] { s = inner_.observe(); });
    return s;
  }

 private:
  template <class F>
  void timed(F&& f) {
    const auto t0 = Clock::now();
    struct Stop {
      Clock::time_point t0;
      double& total;
      ~Stop() { total += std::chrono::duration<double>(Clock::now() - t0).count(); }
    } stop{t0, seconds_};
    f();
  }
  Engine& inner_;
  double& seconds_;
};

void BM_LockstepRandomPrograms(benchmark::State& state) {
  torch_set_num_threads(1);
  const int batch = 200;
  GenOptions gen;
  gen.max_size = static_cast<int>(state.range(0));
  RandomPrograms programs(1, gen);
  std::vector<Program> batch_programs;
  for (int i = 0; i < batch; ++i) batch_programs.push_back(programs.at(static_cast<uint64_t>(i)).value());

  double oracle_seconds = 0, total_seconds = 0;
  int64_t failed = 0, done = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    for (const Program& p : batch_programs) {
      auto oracle = make_torch_engine();
      auto impl = make_impl_engine();
      TimedEngine timed(*oracle, oracle_seconds);
      LockstepOptions options;
      options.mode = state.range(1) ? RunMode::FreeRunning : RunMode::Lockstep;
      LockstepResult r = run_lockstep(p, timed, *impl, options);
      failed += r.passed ? 0 : 1;
      ++done;
    }
    total_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  state.counters["programs_per_second"] = done / total_seconds;
  state.counters["overhead_ratio"] = total_seconds / oracle_seconds;
  state.counters["failed"] = static_cast<double>(failed);
}
// Args: max size, free-running (0: lockstep mode, 1: free-running with the error budget).
BENCHMARK(BM_LockstepRandomPrograms)
    ->Args({30, 0})
    ->Args({100, 0})
    ->Args({30, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace
}  // namespace lockstep

// main() comes from replay_bench.cc (one conformance_bench executable).
