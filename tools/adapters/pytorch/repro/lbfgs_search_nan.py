# torch's Python LBFGS against LibTorch's C++ LBFGS, line_search_fn "strong_wolfe" with a NaN loss (SEMANTICS §16.6,
# §11.19): p = [0] with a grad of -2 already, loss p + NaN, the closure not zeroing the grad (each call adds 1). The
# first call's grad is -1 (d = 1, t = 1); at the trial the grad is 0, so the curvature condition holds and the search
# is done with one point. Its low end is chosen by comparing the losses, NaN <= NaN, which is false in both APIs: C++
# takes the one point (2 calls, p ends at 1; `lockstep trace` of such a program with --engine oracle), Python indexes
# a second end that does not exist and fails the step with IndexError ("list index out of range").
# Exit 0: the Python behaviour below holds (checked with python3-torch 1.13 and 2.6); 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
p.grad = torch.tensor([-2.0], dtype=torch.float64)
opt = torch.optim.LBFGS([p], line_search_fn="strong_wolfe")
calls = [0]


def closure():
    calls[0] += 1
    loss = (p + float("nan")).sum()
    loss.backward()
    return loss


try:
    opt.step(closure)
    print("no error after", calls[0], "calls")
    sys.exit(1)
except IndexError as e:
    print("IndexError after", calls[0], "calls:", e)
    sys.exit(0 if calls[0] == 2 else 1)
