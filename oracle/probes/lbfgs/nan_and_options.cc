// Black-box probes of torch::optim::LBFGS (SEMANTICS §16.1, §16.3): NaN gradients, an unknown line_search_fn (when it
// fails), history_size -1 (0 crashes LibTorch 1.13, so it is not probed here), the defaults' max_eval.
#include <torch/torch.h>
#include <cmath>
#include <cstdio>
using torch::optim::LBFGS;
using torch::optim::LBFGSOptions;
using torch::optim::LBFGSParamState;
static void report(const char* name, LBFGS& opt, int calls, const torch::Tensor& x) {
  if (opt.state().empty()) { std::printf("%s: calls=%d no state x=%g,%g\n", name, calls, x[0].item<double>(), x[1].item<double>()); return; }
  auto& st = static_cast<LBFGSParamState&>(*opt.state().begin()->second);
  std::printf("%s: calls=%d func_evals=%ld n_iter=%ld x=%g,%g\n", name, calls, (long)st.func_evals(), (long)st.n_iter(),
              x[0].item<double>(), x[1].item<double>());
}
int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  auto o64 = torch::TensorOptions().dtype(torch::kFloat64);
  const double nan = std::nan("");
  {  // every gradient element NaN at the first call
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).max_iter(3));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = torch::full({2}, nan, o64); return torch::tensor(1.0, o64); });
    } catch (const std::exception& e) { std::printf("all-NaN threw %s\n", e.what()); }
    report("all-NaN grad", opt, calls, x);
  }
  {  // one NaN among tiny gradients
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).max_iter(3));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = torch::tensor({nan, 1e-9}, o64); return torch::tensor(1.0, o64); });
    } catch (const std::exception& e) { std::printf("NaN+tiny threw %s\n", e.what()); }
    report("NaN among tiny", opt, calls, x);
  }
  {  // a NaN appearing at the second call only
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).max_iter(5));
    int calls = 0;
    opt.step([&] { ++calls; x.mutable_grad() = calls == 2 ? torch::tensor({nan, 1e-9}, o64) : (2 * x).detach(); return torch::tensor(1.0 * calls, o64); });
    report("NaN at call 2", opt, calls, x);
  }
  {  // unknown line search: when does it throw?
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).line_search_fn("foo"));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = (2 * x).detach(); return (x * x).sum().detach(); });
    } catch (const std::exception& e) { std::printf("foo threw: %.40s\n", e.what()); }
    report("line_search foo", opt, calls, x);
  }
  {  // unknown line search where the first direction is not a descent one (g . d > -tolerance_change)
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).line_search_fn("foo"));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = torch::tensor({1e-5, 0.0}, o64); return torch::tensor(1.0, o64); });
      std::printf("foo with g.d > -tolerance_change: no throw\n");
    } catch (const std::exception& e) { std::printf("foo with g.d > -tolerance_change threw: %.40s\n", e.what()); }
    report("foo gtd", opt, calls, x);
  }
  {  // unknown line search at an optimal point
    auto x = torch::tensor({0.0, 0.0}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).line_search_fn("foo"));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = (2 * x).detach(); return (x * x).sum().detach(); });
      std::printf("foo at optimum: no throw\n");
    } catch (const std::exception& e) { std::printf("foo at optimum threw: %.40s\n", e.what()); }
  }
  for (int64_t h : {-1}) {
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).max_iter(4).history_size(h));
    int calls = 0;
    try {
      opt.step([&] { ++calls; x.mutable_grad() = (4 * x * x * x).detach(); return (x * x * x * x).sum().detach(); });
      report(h == 0 ? "history 0" : "history -1", opt, calls, x);
    } catch (const std::exception& e) { std::printf("history %ld threw after %d calls: %.60s\n", (long)h, calls, e.what()); }
  }
  {
    auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
    LBFGS opt({x}, LBFGSOptions(1).max_iter(8));
    auto& d = static_cast<const LBFGSOptions&>(opt.defaults());
    std::printf("defaults max_eval %s %ld\n", d.max_eval() ? "set" : "unset", d.max_eval() ? (long)*d.max_eval() : -1L);
  }
}
