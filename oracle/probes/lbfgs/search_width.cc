// Black-box probe of torch::optim::LBFGS's strong_wolfe (SEMANTICS §16.6): where the bracketing phase ends with a
// bracket already narrower than 1e-9, does the zoom try a point before it tests the width?
// A linear loss whose backward gets a gradient not its slope (mean(w) 3x3, backward(0.04998779296875)) ends the
// bracketing at a tie of two losses 1e-8 apart in t; Python makes 6 calls (tests the width first), see
// search_tolerance.py for the tolerance itself. Prints every call's w[0] and loss, then the count.
#include <torch/torch.h>

#include <cstdio>
#include <vector>

int main() {
  auto o64 = torch::TensorOptions().dtype(torch::kFloat64);
  std::vector<double> values(9, 0.0);
  values[7] = 8388608.0;
  auto w = torch::tensor(values, o64).reshape({3, 3}).requires_grad_(true);
  torch::optim::LBFGSOptions o(1.0);
  o.max_eval(0).line_search_fn("strong_wolfe");
  torch::optim::LBFGS opt({w}, o);
  int calls = 0;
  opt.step([&] {
    opt.zero_grad();
    auto loss = w.mean();
    loss.backward(torch::tensor(0.04998779296875, o64));
    std::printf("call %d w0=%.17g loss=%.17g\n", calls++, w.flatten()[0].item<double>(), loss.item<double>());
    return loss;
  });
  std::printf("closure calls: %d\n", calls);
}
