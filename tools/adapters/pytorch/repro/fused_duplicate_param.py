# torch 2.x, fused=True optimizers on the CPU: a parameter listed twice in one group. The single-tensor path (and
# LibTorch's C++ optimizers) update it twice in turn, each update reading the previous one's result and one shared
# state (SEMANTICS 7.4, named case sem7-param-twice-in-group-has-one-state); the fused kernel reads both entries'
# inputs before writing, so the result differs. Prints both; exits 0 while the deviation reproduces, 1 once it does
# not, 2 when this torch has no fused CPU path.
import sys
import warnings
import torch
warnings.simplefilter("ignore")  # "optimizer contains a parameter group with duplicate parameters"
print("torch", torch.__version__)
def run(cls, **kw):
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = cls([{"params": [p, p]}], lr=0.1, **kw)
    p.grad = torch.tensor([1.0, 1.0])
    opt.step()
    s = opt.state[p]
    return [round(x, 9) for x in p.detach().tolist()], {k: (v.tolist() if torch.is_tensor(v) else v) for k, v in s.items()}
ran = False
reproduces = False
for cls, kw in ((torch.optim.Adam, {}), (torch.optim.AdamW, {}), (torch.optim.SGD, {"momentum": 0.9})):
    try:
        fused = run(cls, fused=True, **kw)
    except (RuntimeError, TypeError) as e:
        print("%s: no fused path on the CPU here (%s)" % (cls.__name__, str(e).splitlines()[0][:80]))
        continue
    ran = True
    single = run(cls, foreach=False, **kw)
    print("%-5s single: p %s state %s" % (cls.__name__, single[0], single[1]))
    print("%-5s fused:  p %s state %s" % (cls.__name__, fused[0], fused[1]))
    reproduces = reproduces or single[0] != fused[0]
if not ran:
    sys.exit(2)
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
