// LibTorch's optimizer steps for benchmarks (torch_bench.h). A second torch translation unit, apart from
// the engine, so that editing the engine does not recompile this one.
#include "oracle/torch_bench.h"

#include <ATen/Parallel.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

namespace lockstep {

TorchStepBench::~TorchStepBench() = default;

namespace {

// One float32 parameter with a fixed random grad (seeded), stepped by `Optimizer`.
template <class Optimizer, class Options>
class OptimizerStepBench : public TorchStepBench {
 public:
  OptimizerStepBench(int64_t numel, Options options) {
    torch::manual_seed(0);
    param_ = torch::randn({numel}, torch::kFloat).set_requires_grad(true);
    param_.mutable_grad() = torch::randn({numel}, torch::kFloat);
    optimizer_ = std::make_unique<Optimizer>(std::vector<torch::Tensor>{param_}, options);
  }
  void step() override { optimizer_->step(); }

 private:
  torch::Tensor param_;
  std::unique_ptr<Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<TorchStepBench> make_torch_sgd_bench(int64_t numel, double lr, double momentum) {
  return std::make_unique<OptimizerStepBench<torch::optim::SGD, torch::optim::SGDOptions>>(
      numel, torch::optim::SGDOptions(lr).momentum(momentum));
}

std::unique_ptr<TorchStepBench> make_torch_adam_bench(int64_t numel, double lr) {
  return std::make_unique<OptimizerStepBench<torch::optim::Adam, torch::optim::AdamOptions>>(
      numel, torch::optim::AdamOptions(lr));
}

void torch_set_num_threads(int threads) { at::set_num_threads(threads); }

}  // namespace lockstep
