// Probe: what optimizer.step(closure) does for the optimizers other than L-BFGS (SEMANTICS §17).
// For each optimizer: how many times the closure is called, whether the returned loss is the closure's, whether
// the update uses the grads the closure made, what happens when the closure throws (state, grads, versions),
// grad mode inside the closure when step is called under NoGradGuard, and step() without a closure.
#include <torch/torch.h>
#include <cstdio>
#include <memory>

template <class Opt, class Options>
void probe(const char* name, Options options) {
  auto x = torch::tensor({1.0, -2.0, 3.0}, torch::kFloat64).requires_grad_(true);
  Opt opt({x}, options);
  int calls = 0;
  bool grad_mode_inside = false;
  auto closure = [&]() -> torch::Tensor {
    ++calls;
    grad_mode_inside = torch::GradMode::is_enabled();
    opt.zero_grad();
    auto loss = (x * x).sum();
    loss.backward();
    return loss;
  };
  torch::Tensor r = opt.step(closure);
  std::printf("%s: calls=%d returned=%s loss=%.17g x=[%.17g %.17g %.17g] grad=[%.17g]\n", name, calls,
              r.defined() ? "defined" : "undefined", r.defined() ? r.item<double>() : 0.0, x[0].item<double>(),
              x[1].item<double>(), x[2].item<double>(), x.grad()[0].item<double>());
  // under no_grad
  {
    torch::NoGradGuard g;
    calls = 0;
    try {
      opt.step(closure);
      std::printf("  under NoGradGuard: calls=%d grad mode inside=%d\n", calls, (int)grad_mode_inside);
    } catch (const std::exception& e) {
      std::printf("  under NoGradGuard: throws after %d calls: %.80s\n", calls, e.what());
    }
  }
  // closure that throws after backward
  auto before = x.clone();
  int64_t v = x._version();
  calls = 0;
  try {
    opt.step([&]() -> torch::Tensor {
      ++calls;
      opt.zero_grad();
      auto loss = (x * x * x).sum();
      loss.backward();
      throw std::runtime_error("closure failed");
    });
  } catch (const std::exception& e) {
    std::printf("  throwing closure: calls=%d rethrown=\"%.40s\" x changed=%d version +%lld grad0=%.17g\n", calls,
                e.what(), (int)!torch::equal(before, x), (long long)(x._version() - v), x.grad()[0].item<double>());
  }
  // closure that returns an undefined tensor
  try {
    torch::Tensor r2 = opt.step([&]() -> torch::Tensor {
      opt.zero_grad();
      (x * x).sum().backward();
      return {};
    });
    std::printf("  undefined loss: returns %s\n", r2.defined() ? "defined" : "undefined");
  } catch (const std::exception& e) {
    std::printf("  undefined loss: throws %.60s\n", e.what());
  }
  // no closure
  torch::Tensor r3 = opt.step();
  std::printf("  step(): returns %s\n", r3.defined() ? "defined" : "undefined");
}

int main() {
  probe<torch::optim::SGD>("sgd", torch::optim::SGDOptions(0.1).momentum(0.9));
  probe<torch::optim::Adam>("adam", torch::optim::AdamOptions(0.1));
  probe<torch::optim::AdamW>("adamw", torch::optim::AdamWOptions(0.1));
  probe<torch::optim::RMSprop>("rmsprop", torch::optim::RMSpropOptions(0.1));
  probe<torch::optim::Adagrad>("adagrad", torch::optim::AdagradOptions(0.1));
}
