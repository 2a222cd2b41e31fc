// Black-box probes of torch::optim::LBFGS's edges (SEMANTICS §16.1, §16.2): groups, no closure, options, undefined grads.
#include <torch/torch.h>
#include <cstdio>
#define TRY(name, body) do { try { body; std::printf("%s: ok\n", name); } catch (const std::exception& e) { std::string m = e.what(); std::printf("%s: threw %s\n", name, m.substr(0, m.find('\n')).c_str()); } } while (0)
int main() {
  auto o64 = torch::TensorOptions().dtype(torch::kFloat64);
  auto w = torch::tensor({1.5, -0.5}, o64).requires_grad_(true);
  auto u = torch::tensor({2.0}, o64).requires_grad_(true);
  TRY("two groups", { torch::optim::LBFGS opt({torch::optim::OptimizerParamGroup({w}), torch::optim::OptimizerParamGroup({u})}); });
  TRY("no closure", { torch::optim::LBFGS opt({w}); opt.step(nullptr); });
  TRY("add_param_group", { torch::optim::LBFGS opt({w}); opt.add_param_group(torch::optim::OptimizerParamGroup({u})); std::printf("groups=%zu\n", opt.param_groups().size()); });
  TRY("negative lr", { torch::optim::LBFGS opt({w}, torch::optim::LBFGSOptions(-1)); });
  TRY("bad line search", { torch::optim::LBFGS opt({w}, torch::optim::LBFGSOptions(1).line_search_fn("foo")); auto c=[&]{ w.grad().defined() ? void(w.grad().zero_()) : void(); auto l=(w*w).sum(); l.backward(); return l;}; opt.step(c); });
  TRY("max_iter 0", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}, torch::optim::LBFGSOptions(1).max_iter(0)); int n=0; auto c=[&]{ ++n; if (x.grad().defined()) x.grad().zero_(); auto l=(x*x).sum(); l.backward(); return l;}; auto r = opt.step(c); std::printf("evals=%d x=%g state=%zu max_eval=%ld\n", n, x[0].item<double>(), opt.state().size(), (long)*static_cast<torch::optim::LBFGSOptions&>(opt.param_groups()[0].options()).max_eval()); });
  TRY("param unused (undefined grad)", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); auto y = torch::tensor({7.0}, o64).requires_grad_(true); torch::optim::LBFGS opt({x, y}, torch::optim::LBFGSOptions(1).max_iter(3)); int n=0; auto c=[&]{ ++n; if (x.grad().defined()) x.grad().zero_(); auto l=(x*x).sum(); l.backward(); return l;}; opt.step(c); std::printf("evals=%d x=%.17g y=%g ydef=%d\n", n, x[0].item<double>(), y.item<double>(), (int)y.grad().defined()); });
  TRY("no backward in closure", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}); auto c=[&]{ return (x*x).sum(); }; opt.step(c); std::printf("x=%g\n", x[0].item<double>()); });
  TRY("grad at optimum", { auto x = torch::tensor({0.0, 0.0}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}); int n=0; auto c=[&]{ ++n; if (x.grad().defined()) x.grad().zero_(); auto l=(x*x).sum(); l.backward(); return l;}; opt.step(c); auto& st = static_cast<torch::optim::LBFGSParamState&>(*opt.state().begin()->second); std::printf("evals=%d func_evals=%ld n_iter=%ld\n", n, (long)st.func_evals(), (long)st.n_iter()); });
  TRY("closure returns non-scalar", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}); auto c=[&]{ if (x.grad().defined()) x.grad().zero_(); auto l=(x*x); l.sum().backward(); return l;}; opt.step(c); });
  TRY("float32 loss f64 params?", {});
  TRY("version bump", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}, torch::optim::LBFGSOptions(1).max_iter(2)); auto v0 = x._version(); auto c=[&]{ if (x.grad().defined()) x.grad().zero_(); auto l=(x*x*x).sum(); l.backward(); return l;}; opt.step(c); std::printf("version %ld -> %ld\n", (long)v0, (long)x._version()); });
  TRY("nan grad", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); torch::optim::LBFGS opt({x}, torch::optim::LBFGSOptions(1).max_iter(4)); int n=0; auto c=[&]{ ++n; if (x.grad().defined()) x.grad().zero_(); auto l=(x.log()).sum(); l.backward(); return l;}; opt.step(c); std::printf("evals=%d x=%g,%g\n", n, x[0].item<double>(), x[1].item<double>()); });
  TRY("mixed dtypes", { auto x = torch::tensor({1.5, -0.5}, o64).requires_grad_(true); auto y = torch::tensor({2.0f}).requires_grad_(true); torch::optim::LBFGS opt({x, y}, torch::optim::LBFGSOptions(1).max_iter(3)); int n=0; auto c=[&]{ ++n; opt.zero_grad(); auto l=(x*x).sum() + (y*y).sum().to(torch::kFloat64); l.backward(); return l;}; opt.step(c); std::printf("evals=%d y=%.9g\n", n, y.item<double>()); });
}
