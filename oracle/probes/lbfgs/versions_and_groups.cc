// Black-box probes of torch::optim::LBFGS (SEMANTICS §16.1, §16.3): version bumps per move, add_param_group, float32 moves.
#include <torch/torch.h>
#include <cstdio>
int main() {
  auto o64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (int mi = 1; mi <= 4; ++mi) {
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    torch::optim::LBFGS opt({x}, torch::optim::LBFGSOptions(1).max_iter(mi));
    int n = 0; std::vector<long> vs;
    auto c = [&] { ++n; vs.push_back(x._version()); if (x.grad().defined()) x.grad().zero_(); auto l = (x * x * x * x).sum(); l.backward(); return l; };
    auto v0 = x._version(); opt.step(c);
    std::printf("max_iter %d: evals %d version %ld -> %ld; at calls:", mi, n, (long)v0, (long)x._version());
    for (long v : vs) std::printf(" %ld", v);
    std::printf("\n");
  }
  // add_param_group then step: is group 1 stepped?
  auto x = torch::tensor({1.5}, o64).requires_grad_(true);
  auto y = torch::tensor({2.5}, o64).requires_grad_(true);
  torch::optim::LBFGS opt({x}, torch::optim::LBFGSOptions(1).max_iter(3));
  opt.add_param_group(torch::optim::OptimizerParamGroup({y}));
  auto c = [&] { opt.zero_grad(); auto l = (x * x * x * x).sum() + (y * y * y * y).sum(); l.backward(); return l; };
  try { opt.step(c); std::printf("after add_param_group: x=%.17g y=%.17g\n", x.item<double>(), y.item<double>()); } catch (const std::exception& e) { std::printf("threw %s\n", e.what()); }
  // float32: t
  auto z = torch::tensor({3.0f, 0.1f, -7.0f}).requires_grad_(true);
  torch::optim::LBFGS o2({z}, torch::optim::LBFGSOptions(0.3).max_iter(1));
  auto c2 = [&] { o2.zero_grad(); auto l = (z * z).sum(); l.backward(); return l; };
  o2.step(c2);
  std::printf("f32 one iter: %.9g %.9g %.9g\n", z[0].item<double>(), z[1].item<double>(), z[2].item<double>());
}
