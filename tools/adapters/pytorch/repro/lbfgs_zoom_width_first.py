# torch's Python LBFGS against LibTorch's C++ LBFGS, line_search_fn "strong_wolfe" (SEMANTICS §16.6, §11.17): where
# the bracketing phase ends with a bracket narrower than 1e-9 (|b1 - b0| |d|_max), Python's zoom tests the width before
# its first trial and makes none; the C++ API tests it after each trial and makes one. mean(w) over a 3x3 float64 w
# with one element 2^23, backward with the gradient 0.04998779296875: two trials 1e-8 apart in t with equal losses end
# the bracketing. Python: 6 closure calls; C++ 1.13 and 2.6: 7 (oracle/probes/lbfgs/search_width.cc).
# Exit 0: the Python behaviour below holds (checked with python3-torch 1.13 and 2.6); 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
values = [0.0] * 9
values[7] = 8388608.0
w = torch.tensor(values, dtype=torch.float64).reshape(3, 3).requires_grad_()
opt = torch.optim.LBFGS([w], max_eval=0, line_search_fn="strong_wolfe")
seen = []


def closure():
    opt.zero_grad()
    loss = w.mean()
    loss.backward(torch.tensor(0.04998779296875, dtype=torch.float64))
    seen.append((w.detach().flatten()[0].item(), loss.item()))
    return loss


opt.step(closure)
for x, loss in seen:
    print("w[0] %.17g loss %.17g" % (x, loss))
ok = len(seen) == 6 and seen[4][1] == seen[5][1]
print("closure calls:", len(seen), "(C++: 7); Python tests the bracket's width before the zoom's trial:", ok)
sys.exit(0 if ok else 1)
