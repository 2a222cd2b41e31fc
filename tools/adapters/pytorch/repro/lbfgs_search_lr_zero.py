# torch's Python LBFGS against LibTorch's C++ LBFGS, line_search_fn "strong_wolfe" with lr 0 (SEMANTICS §16.6, §11.18):
# every trial is at x0 (t = 0), so the cubic interpolation's (f1 - f2) / (x1 - x2) divides by zero. Python raises
# ZeroDivisionError ("float division by zero") on its second call; C++ computes it in double (inf, NaN) and goes on
# (w = [0], loss w: 5 closure calls and the step returns 0; run `lockstep trace` of such a program with --engine oracle).
# Exit 0: the Python behaviour below holds (checked with python3-torch 1.13 and 2.6); 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
w = torch.zeros(1, dtype=torch.float64, requires_grad=True)
opt = torch.optim.LBFGS([w], lr=0.0, line_search_fn="strong_wolfe")
calls = [0]


def closure():
    calls[0] += 1
    opt.zero_grad()
    loss = w.sum()
    loss.backward()
    return loss


try:
    opt.step(closure)
    print("no error after", calls[0], "calls")
    sys.exit(1)
except ZeroDivisionError as e:
    print("ZeroDivisionError after", calls[0], "calls:", e)
    sys.exit(0 if calls[0] == 2 else 1)
