// A tiny torch-free API for benchmarks that compare an implementation's optimizer step with LibTorch's.
//
// Example (Google Benchmark):
//   lockstep::torch_set_num_threads(1);
//   auto bench = lockstep::make_torch_adam_bench(1 << 20, 1e-3);
//   for (auto _ : state) bench->step();            // one torch::optim::Adam::step() per iteration
//
// Each bench owns one float32 parameter of `numel` elements and a fixed random grad set once (seeded, so
// every run steps the same numbers); step() calls the optimizer's step() and nothing else.
#pragma once

#include <cstdint>
#include <memory>

namespace lockstep {

class TorchStepBench {
 public:
  virtual ~TorchStepBench();
  virtual void step() = 0;
};

// torch::optim::SGD with the given lr and momentum (0: no momentum buffer).
std::unique_ptr<TorchStepBench> make_torch_sgd_bench(int64_t numel, double lr, double momentum);

// torch::optim::Adam with the given lr and the option type's other defaults.
std::unique_ptr<TorchStepBench> make_torch_adam_bench(int64_t numel, double lr);

// at::set_num_threads: the number of threads LibTorch's CPU kernels use.
void torch_set_num_threads(int threads);

}  // namespace lockstep
