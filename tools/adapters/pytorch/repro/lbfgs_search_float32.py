# torch's Python LBFGS against LibTorch's C++ LBFGS, line_search_fn "strong_wolfe" on float32 parameters (SEMANTICS
# §16.6, §11.16). w = [2^27, 0] (float32), loss mean(w): every trial's loss is 2^26 in float32, the same as at x0. The
# C++ API tests the sufficient decrease f_new > f + c1 t g.d in double, where it holds (2^26 > 2^26 - 1.25e-5): the
# first trial brackets and the zoom shrinks towards 0 (15 calls: w[1] = 0, -0.5, -0.10566, -0.02233, ...; run
# `lockstep trace` of this program with --engine oracle). Python computes f + c1 t g.d as a float32 tensor, where it
# rounds to 2^26, so the test fails and the search extrapolates: w[1] = 0, -0.5, -0.505, -0.50505, ... (9 calls).
# Exit 0: the Python behaviour below holds (checked with python3-torch 1.13 and 2.6); 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
w = torch.tensor([134217728.0, 0.0], dtype=torch.float32, requires_grad=True)
opt = torch.optim.LBFGS([w], line_search_fn="strong_wolfe")
seen = []


def closure():
    opt.zero_grad()
    loss = w.mean()
    loss.backward()
    seen.append(w[1].item())
    return loss


opt.step(closure)
print("closure calls:", len(seen), "w[1] at each:", ["%.6g" % x for x in seen])
ok = len(seen) == 9 and abs(seen[2] - (-0.505)) < 1e-6
print("Python extrapolates after the first trial (C++ zooms):", ok)
sys.exit(0 if ok else 1)
