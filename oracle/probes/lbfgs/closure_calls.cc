// Black-box probe of torch::optim::LBFGS (SEMANTICS §16.3): logs every closure call's parameter values and loss.
// Usage: closure_calls LINE_SEARCH(none|strong_wolfe) PROBLEM(0-2) MAX_ITER LR HISTORY_SIZE f32|f64 STEPS
#include <torch/torch.h>
#include <cstdio>
#include <string>
int main(int argc, char** argv) {
  std::string ls = argc > 1 ? argv[1] : "none";
  int problem = argc > 2 ? std::atoi(argv[2]) : 0;
  int64_t max_iter = argc > 3 ? std::atoll(argv[3]) : 20;
  double lr = argc > 4 ? std::atof(argv[4]) : 1;
  int64_t hist = argc > 5 ? std::atoll(argv[5]) : 100;
  bool f32 = argc > 6 && std::string(argv[6]) == "f32";
  int steps = argc > 7 ? std::atoi(argv[7]) : 2;
  auto opt64 = torch::TensorOptions().dtype(f32 ? torch::kFloat32 : torch::kFloat64);
  auto w = torch::tensor({1.5, -0.5, 2.0}, opt64).requires_grad_(true);
  auto v = torch::tensor({0.25, 3.0}, opt64).requires_grad_(true);
  torch::optim::LBFGSOptions o(lr);
  o.max_iter(max_iter).history_size(hist);
  if (ls != "none") o.line_search_fn(ls);
  torch::optim::LBFGS opt({w, v}, o);
  int call = 0;
  auto closure = [&]() {
    opt.zero_grad();
    torch::Tensor loss;
    if (problem == 0) loss = (w * w * w * w).sum() + (v * v).sum() * 3 + (w.sum() * v.sum());
    else if (problem == 1) loss = (w.exp()).sum() + (v - 1).pow(2).sum() * 10 + (w * w).sum();
    else loss = (w * w).sum() * 0.5 + (v * v).sum() * 2;
    loss.backward();
    std::printf("call %d x=%.17g,%.17g,%.17g,%.17g,%.17g loss=%.17g\n", call++, w[0].item<double>(), w[1].item<double>(),
                w[2].item<double>(), v[0].item<double>(), v[1].item<double>(), loss.item<double>());
    return loss;
  };
  for (int s = 0; s < steps; ++s) {
    auto r = opt.step(closure);
    std::printf("step %d returned %.17g\n", s, r.item<double>());
    auto& st = static_cast<torch::optim::LBFGSParamState&>(*opt.state().begin()->second);
    std::printf("state: keys=%zu func_evals=%ld n_iter=%ld t=%.17g prev_loss=%.17g H_diag=%.17g d=%s old=%zu\n", opt.state().size(),
                (long)st.func_evals(), (long)st.n_iter(), st.t(), st.prev_loss(), st.H_diag().defined() ? st.H_diag().item<double>() : -1.0,
                st.d().defined() ? "def" : "undef", st.old_dirs().size());
  }
}
