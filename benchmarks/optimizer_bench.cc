// Benchmarks of the clean-room optimizer steps against LibTorch 1.13's, on one float32 parameter, one thread.
//
//   impl_bench --benchmark_filter='Adam'          # impl vs torch vs the 28 B/element streaming floor
//
// Every benchmark reports bytes_per_second for the bytes the step must stream at least: SGD with momentum
// reads p, grad, buf and writes p, buf (20 B/element); Adam reads p, grad, exp_avg, exp_avg_sq and writes p,
// exp_avg, exp_avg_sq (28 B/element). StreamFloor28B is the floor: one loop that reads those four float
// arrays and writes three, with trivial arithmetic, so memory traffic is all it costs.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "impl/adam.h"
#include "impl/sgd.h"
#include "oracle/torch_bench.h"

namespace {

using lockstep::impl::Adam;
using lockstep::impl::AdamOptions;
using lockstep::impl::DType;
using lockstep::impl::SGD;
using lockstep::impl::SGDOptions;
using lockstep::impl::Tensor;

constexpr double kLr = 1e-3;
constexpr double kMomentum = 0.9;

// A float32 parameter of n elements with a fixed random grad.
Tensor make_param_with_grad(int64_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0, 1);
  Tensor p = Tensor::zeros(DType::Float32, {n});
  Tensor g = Tensor::zeros(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) {
    p.data<float>()[i] = normal(rng);
    g.data<float>()[i] = normal(rng);
  }
  p.set_requires_grad(true);
  p.set_grad(g);
  return p;
}

void set_counters(benchmark::State& state, int64_t n, int64_t bytes_per_element) {
  state.SetBytesProcessed(state.iterations() * n * bytes_per_element);
  state.counters["elements"] = static_cast<double>(n);
  state.counters["ns_per_element"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ImplSgdMomentum(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor p = make_param_with_grad(n);
  SGD sgd({p}, SGDOptions(kLr).set_momentum(kMomentum));
  sgd.step();  // create the buffer outside the timed loop
  for (auto _ : state) {
    sgd.step();
    benchmark::DoNotOptimize(p.data<float>());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 20);
}

void BM_TorchSgdMomentum(benchmark::State& state) {
  const int64_t n = state.range(0);
  lockstep::torch_set_num_threads(1);
  auto bench = lockstep::make_torch_sgd_bench(n, kLr, kMomentum);
  bench->step();
  for (auto _ : state) bench->step();
  set_counters(state, n, 20);
}

void BM_ImplAdam(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor p = make_param_with_grad(n);
  Adam adam({p}, AdamOptions(kLr));
  adam.step();
  for (auto _ : state) {
    adam.step();
    benchmark::DoNotOptimize(p.data<float>());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 28);
}

void BM_TorchAdam(benchmark::State& state) {
  const int64_t n = state.range(0);
  lockstep::torch_set_num_threads(1);
  auto bench = lockstep::make_torch_adam_bench(n, kLr);
  bench->step();
  for (auto _ : state) bench->step();
  set_counters(state, n, 28);
}

// The floor: read p, grad, exp_avg, exp_avg_sq (16 B) and write p, exp_avg, exp_avg_sq (12 B) per element.
void BM_StreamFloor28B(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> p(n, 1.0f), g(n, 0.5f), m(n, 0.25f), v(n, 0.125f);
  for (auto _ : state) {
    float* __restrict pp = p.data();
    const float* __restrict gp = g.data();
    float* __restrict mp = m.data();
    float* __restrict vp = v.data();
    for (int64_t i = 0; i < n; ++i) {
      const float gi = gp[i];
      pp[i] = pp[i] + gi;
      mp[i] = mp[i] + gi;
      vp[i] = vp[i] + gi;
    }
    benchmark::DoNotOptimize(pp);
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 28);
}

constexpr int64_t kSmall = 100000;
constexpr int64_t kLarge = 10000000;

BENCHMARK(BM_ImplSgdMomentum)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchSgdMomentum)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ImplAdam)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchAdam)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamFloor28B)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
