// L-BFGS history capacity (SEMANTICS 16.1): history_size changed between steps, before and after the history's first
// use. Standalone; build as the other probes of this folder (run.sh). The same output on 1.13 and 2.6.
#include <torch/torch.h>
#include <cstdio>
using namespace torch::optim;
// history_size changed by the group's options between steps: when does the step fail?
void run(const char* name, int64_t h0, int64_t first_iters, int64_t h1, int steps) {
  auto x = torch::tensor({1.5, -0.5, 2.0, 0.25}, torch::kFloat64).requires_grad_(true);
  LBFGS opt({x}, LBFGSOptions(0.5).max_iter(first_iters).history_size(h0));
  auto c = [&] { opt.zero_grad(); auto l = (x * x * x * x).sum() + (x * x).sum(); l.backward(); return l; };
  opt.step(c);
  auto& st = static_cast<LBFGSParamState&>(*opt.state().begin()->second);
  std::printf("%s: after first step n_iter=%ld pairs=%zu\n", name, (long)st.n_iter(), st.old_dirs().size());
  auto& o = static_cast<LBFGSOptions&>(opt.param_groups()[0].options());
  o.history_size(h1);
  o.max_iter(1);
  for (int s = 0; s < steps; ++s) {
    try { opt.step(c); std::printf("  step %d ok pairs=%zu\n", s, st.old_dirs().size()); }
    catch (const std::exception& e) { std::printf("  step %d error pairs=%zu: %.80s\n", s, st.old_dirs().size(), e.what()); break; }
  }
}
int main() {
  run("2->4 after two-loop", 2, 4, 4, 6);
  run("2->4 before any two-loop (max_iter 1)", 2, 1, 4, 6);
  run("3->1 after two-loop", 3, 5, 1, 6);
  run("100->2 after two-loop", 100, 5, 2, 6);
}
