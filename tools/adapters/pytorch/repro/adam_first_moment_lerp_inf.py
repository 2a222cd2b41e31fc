# torch 2.x's Python Adam/AdamW (single-tensor, foreach and fused on the CPU alike): the first moment is updated with
# lerp_, which for a weight 1 - beta1 above 0.5 computes end - (end - start) * beta1, so an infinite gradient gives
# inf - inf * beta1 = NaN where LibTorch's C++ Adam (exp_avg * beta1 + (1 - beta1) * g, SEMANTICS 6.3) and torch 1.13's
# Python Adam give inf (with beta1 >= 0.5 too, once the moment and the grad are infinite the same way:
# m + (1 - beta1) * (g - m) = inf - inf). Centered RMSprop's grad_avg is a lerp as well. Prints the moments;
# exits 0 while the deviation reproduces (NaN for beta1 < 0.5), 1 once it does not (1.13 gives inf everywhere).
import sys
import torch
print("torch", torch.__version__)
reproduces = False
for cls in (torch.optim.Adam, torch.optim.AdamW):
    for mode, kw in (("single", {"foreach": False}), ("foreach", {"foreach": True}), ("fused", {"fused": True})):
        for beta1 in (0.0, 0.4, 0.6, 0.9):
            p = torch.tensor(4096.0, requires_grad=True)
            torch.exp(p).backward()        # exp(4096) overflows: grad = +inf
            try:
                opt = cls([p], betas=(beta1, 0.0), **kw)
                opt.step()
            except (RuntimeError, TypeError) as e:   # 1.13 has no fused path on the CPU
                print("%-5s %-7s: not here (%s)" % (cls.__name__, mode, str(e).splitlines()[0][:60]))
                break
            exp_avg = opt.state[p]["exp_avg"].item()
            print("%-5s %-7s beta1 %.1f: grad %s, exp_avg %s (C++: inf)" %
                  (cls.__name__, mode, beta1, p.grad.item(), exp_avg))
            reproduces = reproduces or (beta1 < 0.5 and exp_avg != exp_avg)
# Centered RMSprop's mean of the gradient: lerp_(grad, 1 - alpha) as well (C++: grad_avg * alpha + (1 - alpha) * grad).
for alpha in (0.5, 0.99):
    p = torch.tensor(4096.0, requires_grad=True)
    torch.exp(p).backward()
    opt = torch.optim.RMSprop([p], alpha=alpha, centered=True, foreach=False)
    opt.step()
    grad_avg = opt.state[p]["grad_avg"].item()
    print("RMSprop centered alpha %.2f: grad %s, grad_avg %s (C++: inf)" % (alpha, p.grad.item(), grad_avg))
    reproduces = reproduces or (alpha == 0.5 and grad_avg != grad_avg)
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
