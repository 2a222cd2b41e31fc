# torch 2.x, Adam/AdamW(fused=True, amsgrad=True) on the CPU: a NaN in the second moment does not survive the running
# maximum. The single-tensor path (and LibTorch's C++ Adam) keep max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq)
# NaN once either is NaN (torch.maximum propagates NaN, SEMANTICS 6.3, named case sem6-amsgrad-max-propagates-nan);
# the fused CPU kernel's max turns it into a number, so the parameter keeps moving where the others stop at NaN.
# Prints both paths; exits 0 while the deviation reproduces, 1 once it does not, 2 when this torch has no fused CPU
# Adam (1.x).
import sys
import torch
print("torch", torch.__version__)
def run(cls, **kw):
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = cls([p], lr=0.1, amsgrad=True, **kw)
    for g in ([float("nan"), 1.0], [1.0, 1.0]):   # a NaN grad at step 1, a finite one at step 2
        p.grad = torch.tensor(g)
        opt.step()
    s = opt.state[p]
    return p.detach().tolist(), s["max_exp_avg_sq"].tolist()
reproduces = False
for cls in (torch.optim.Adam, torch.optim.AdamW):
    single = run(cls, foreach=False)
    try:
        fused = run(cls, fused=True)
    except (RuntimeError, TypeError) as e:
        print("%s: no fused path on the CPU here (%s)" % (cls.__name__, str(e).splitlines()[0][:80]))
        sys.exit(2)
    print("%-5s single: p %-28s max_exp_avg_sq %s" % (cls.__name__, single[0], single[1]))
    print("%-5s fused:  p %-28s max_exp_avg_sq %s" % (cls.__name__, fused[0], fused[1]))
    single_nan = single[1][0] != single[1][0]
    fused_nan = fused[1][0] != fused[1][0]
    reproduces = reproduces or (single_nan and not fused_nan)
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
