// Black-box probe of LibTorch's gradient clipping (issue 32; SEMANTICS to be written from it): clip_grad_norm_ and
// clip_grad_value_ of the C++ API on undefined, aliased and non-finite grads. Prints what each call returns and
// every grad after it, with the grad's version counter (an in-place multiply bumps it).
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

torch::Tensor leaf(std::vector<float> v) { return torch::tensor(v).requires_grad_(true); }

void show(const std::string& what, const std::vector<torch::Tensor>& ps) {
  std::printf("  %s:", what.c_str());
  for (size_t i = 0; i < ps.size(); ++i) {
    const torch::Tensor& g = ps[i].grad();
    if (!g.defined()) {
      std::printf(" p%zu=None", i);
      continue;
    }
    std::printf(" p%zu=[", i);
    for (int64_t j = 0; j < g.numel(); ++j) std::printf("%s%.9g", j ? ", " : "", g.flatten()[j].item<double>());
    std::printf("] v%lld", static_cast<long long>(g._version()));
  }
  std::printf("\n");
}

void set_grad(torch::Tensor& p, std::vector<float> g) { p.mutable_grad() = torch::tensor(g); }

template <class F>
void attempt(const std::string& what, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::string m = e.what();
    std::printf("  %s: threw: %s\n", what.c_str(), m.substr(0, m.find('\n')).c_str());
  }
}

}  // namespace

int main() {
  const double inf = std::numeric_limits<double>::infinity();
  std::printf("clip_grad_norm_ max_norm 1, grads [3] [4] None:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1}), leaf({1}), leaf({1})};
    set_grad(ps[0], {3});
    set_grad(ps[1], {4});
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ max_norm 10 (no clipping needed), grads [3] [4]:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1}), leaf({1})};
    set_grad(ps[0], {3});
    set_grad(ps[1], {4});
    show("before", ps);
    const double n = torch::nn::utils::clip_grad_norm_(ps, 10.0);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ norm_type inf, max_norm 1, grads [3, -5] [4]:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1, 1}), leaf({1})};
    set_grad(ps[0], {3, -5});
    set_grad(ps[1], {4});
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0, inf);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ norm_type 1, max_norm 1, grads [3, -5] [4]:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1, 1}), leaf({1})};
    set_grad(ps[0], {3, -5});
    set_grad(ps[1], {4});
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0, 1.0);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ non-finite: grads [inf] [4], error_if_nonfinite false then true:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1}), leaf({1})};
    set_grad(ps[0], {std::numeric_limits<float>::infinity()});
    set_grad(ps[1], {4});
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0, 2.0, false);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
    set_grad(ps[0], {std::numeric_limits<float>::infinity()});
    set_grad(ps[1], {4});
    attempt("error_if_nonfinite", [&] { torch::nn::utils::clip_grad_norm_(ps, 1.0, 2.0, true); });
    show("after the error", ps);
    set_grad(ps[0], {std::nanf("")});
    set_grad(ps[1], {4});
    attempt("NaN with error_if_nonfinite", [&] { torch::nn::utils::clip_grad_norm_(ps, 1.0, 2.0, true); });
    const double m = torch::nn::utils::clip_grad_norm_(ps, 1.0, 2.0, false);
    std::printf("  NaN without: returned %.17g\n", m);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ aliased grads (p1's grad is p0's tensor), [3] [3], max_norm 1:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1}), leaf({1})};
    set_grad(ps[0], {3});
    ps[1].mutable_grad() = ps[0].grad();
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_norm_ no grads at all, and an empty list:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1})};
    std::printf("  all None: returned %.17g\n", torch::nn::utils::clip_grad_norm_(ps, 1.0));
    std::vector<torch::Tensor> none;
    std::printf("  empty: returned %.17g\n", torch::nn::utils::clip_grad_norm_(none, 1.0));
  }
  std::printf("clip_grad_norm_ max_norm 0 and negative, grads [3] [4]:\n");
  for (double mn : {0.0, -1.0}) {
    std::vector<torch::Tensor> ps = {leaf({1}), leaf({1})};
    set_grad(ps[0], {3});
    set_grad(ps[1], {4});
    attempt("max_norm " + std::to_string(mn), [&] {
      std::printf("  max_norm %g: returned %.17g\n", mn, torch::nn::utils::clip_grad_norm_(ps, mn));
    });
    show("after", ps);
  }
  std::printf("clip_grad_norm_ float64 and float32 mixed, grads [3] (f64) [4] (f32), max_norm 1:\n");
  {
    auto p0 = torch::tensor({1.0}, torch::kFloat64).requires_grad_(true);
    auto p1 = leaf({1});
    p0.mutable_grad() = torch::tensor({3.0}, torch::kFloat64);
    p1.mutable_grad() = torch::tensor({4.0f});
    std::vector<torch::Tensor> ps = {p0, p1};
    const double n = torch::nn::utils::clip_grad_norm_(ps, 1.0);
    std::printf("  returned %.17g\n", n);
    show("after", ps);
  }
  std::printf("clip_grad_value_ 2.5, grads [3, -5, 1, NaN] None, then aliased:\n");
  {
    std::vector<torch::Tensor> ps = {leaf({1, 1, 1, 1}), leaf({1})};
    set_grad(ps[0], {3, -5, 1, std::nanf("")});
    torch::nn::utils::clip_grad_value_(ps, 2.5);
    show("after", ps);
    attempt("clip_value -1", [&] { torch::nn::utils::clip_grad_value_(ps, -1.0); });
    show("after -1", ps);
  }
}
