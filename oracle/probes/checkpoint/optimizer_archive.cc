// Black-box probe of what the C++ API keeps of an optimizer across torch::save / torch::load (issue 32: checkpoint and
// resume; the C++ API has no state_dict()). Adam and SGD with momentum: two steps, save, a fresh optimizer over the
// same parameters loads it, and both take a third step; then loading into an optimizer whose options or groups differ.
#include <torch/torch.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

void grad_step(torch::optim::Optimizer& opt, torch::Tensor& w) {
  opt.zero_grad();
  (w * w * w).sum().backward();
  opt.step();
}

std::string archive_of(torch::optim::Optimizer& opt) {
  std::ostringstream out;
  torch::save(opt, out);
  return out.str();
}

template <class Opt>
void load_from(Opt& opt, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::load(opt, in);
}

void show(const char* what, const torch::Tensor& w) {
  std::printf("  %s: w = [%.17g, %.17g]\n", what, w[0].item<double>(), w[1].item<double>());
}

template <class F>
void attempt(const char* what, F f) {
  try {
    f();
    std::printf("  %s: accepted\n", what);
  } catch (const std::exception& e) {
    std::string m = e.what();
    std::printf("  %s: threw: %s\n", what, m.substr(0, m.find('\n')).c_str());
  }
}

}  // namespace

int main() {
  auto o64 = torch::TensorOptions().dtype(torch::kFloat64);
  std::printf("Adam lr 0.1: 3 steps uninterrupted, against 2 steps, save, load into a fresh Adam, 1 step\n");
  {
    auto a = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    torch::optim::Adam whole({a}, torch::optim::AdamOptions(0.1));
    for (int i = 0; i < 3; ++i) grad_step(whole, a);
    show("uninterrupted", a);
    auto b = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    torch::optim::Adam first({b}, torch::optim::AdamOptions(0.1));
    for (int i = 0; i < 2; ++i) grad_step(first, b);
    const std::string saved = archive_of(first);
    torch::optim::Adam resumed({b}, torch::optim::AdamOptions(0.1));
    load_from(resumed, saved);
    auto& st = static_cast<torch::optim::AdamParamState&>(*resumed.state().begin()->second);
    std::printf("  loaded: state entries %zu, step %lld\n", resumed.state().size(), static_cast<long long>(st.step()));
    grad_step(resumed, b);
    show("resumed", b);
    std::printf("  loaded lr: %.17g (saved 0.1, constructed 0.1)\n",
                static_cast<torch::optim::AdamOptions&>(resumed.param_groups()[0].options()).lr());
    torch::optim::Adam other_lr({b}, torch::optim::AdamOptions(0.5).amsgrad(true));
    load_from(other_lr, saved);
    auto& oo = static_cast<torch::optim::AdamOptions&>(other_lr.param_groups()[0].options());
    std::printf("  loaded into Adam(lr 0.5, amsgrad): lr %.17g amsgrad %d\n", oo.lr(), static_cast<int>(oo.amsgrad()));
    attempt("a step after loading into amsgrad", [&] { grad_step(other_lr, b); });
  }
  std::printf("SGD lr 0.1 momentum 0.9: the same\n");
  {
    auto a = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    torch::optim::SGD whole({a}, torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int i = 0; i < 3; ++i) grad_step(whole, a);
    show("uninterrupted", a);
    auto b = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    torch::optim::SGD first({b}, torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int i = 0; i < 2; ++i) grad_step(first, b);
    const std::string saved = archive_of(first);
    torch::optim::SGD resumed({b}, torch::optim::SGDOptions(0.1).momentum(0.9));
    load_from(resumed, saved);
    grad_step(resumed, b);
    show("resumed", b);
  }
  std::printf("Loading where the parameters differ\n");
  {
    auto b = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    auto c = torch::tensor({3.0}, o64).requires_grad_(true);
    torch::optim::Adam first({b}, torch::optim::AdamOptions(0.1));
    grad_step(first, b);
    const std::string saved = archive_of(first);
    torch::optim::Adam two({b, c}, torch::optim::AdamOptions(0.1));
    attempt("into Adam over two parameters", [&] { load_from(two, saved); });
    torch::optim::Adam other({c}, torch::optim::AdamOptions(0.1));
    attempt("into Adam over another parameter of another shape", [&] { load_from(other, saved); });
    if (!other.state().empty()) {
      auto& st = static_cast<torch::optim::AdamParamState&>(*other.state().begin()->second);
      std::printf("  its exp_avg sizes: %lld elements, param %lld\n", static_cast<long long>(st.exp_avg().numel()),
                  static_cast<long long>(c.numel()));
    }
    torch::optim::Adam two_groups({b}, torch::optim::AdamOptions(0.1));
    two_groups.add_param_group(torch::optim::OptimizerParamGroup({c}));
    attempt("into Adam with two groups", [&] { load_from(two_groups, saved); });
    torch::optim::SGD sgd({b}, torch::optim::SGDOptions(0.1));
    attempt("an Adam archive into SGD", [&] { load_from(sgd, saved); });
  }
  std::printf("A fresh Adam saved before any step, loaded into one that has stepped\n");
  {
    auto b = torch::tensor({1.0, -2.0}, o64).requires_grad_(true);
    torch::optim::Adam fresh({b}, torch::optim::AdamOptions(0.1));
    const std::string saved = archive_of(fresh);
    torch::optim::Adam stepped({b}, torch::optim::AdamOptions(0.1));
    grad_step(stepped, b);
    load_from(stepped, saved);
    std::printf("  state entries after loading: %zu\n", stepped.state().size());
  }
}
