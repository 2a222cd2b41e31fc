// Standalone repro (issue 32, SEMANTICS 19.3): LibTorch's C++ optimizer over a group that lists one parameter twice
// saves and loads fine, but the load leaves that parameter a null state entry, and the next step dereferences it.
// Found by lockstep's random programs against LibTorch 1.13 (every optimizer kind); exits by a segmentation fault
// where the bug holds. Build and run: see run.sh.
#include <torch/torch.h>

#include <cstdio>
#include <sstream>

int main() {
  auto w = torch::tensor({1.0}, torch::TensorOptions().dtype(torch::kFloat64)).requires_grad_(true);
  torch::optim::SGD sgd({w, w}, torch::optim::SGDOptions(0.1).momentum(0.9));
  (w * w).sum().backward();
  sgd.step();
  std::ostringstream out;
  torch::save(sgd, out);
  std::istringstream in(out.str());
  torch::load(sgd, in);
  std::printf("state entries after the load: %zu, the entry's state is %s\n", sgd.state().size(),
              sgd.state().begin()->second ? "set" : "null");
  std::fflush(stdout);
  sgd.step();  // LibTorch 1.13: segmentation fault here
  std::printf("a step after the load: ran\n");
}
