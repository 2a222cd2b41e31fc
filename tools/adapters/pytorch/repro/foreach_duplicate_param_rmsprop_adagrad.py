# torch 1.13: a parameter listed twice in one RMSprop or Adagrad group. foreach=False (and LibTorch, SEMANTICS 7.4:
# a parameter twice in one group is updated twice, the second update building on the first) runs the two updates
# in sequence; foreach=True runs each phase over the group's whole list before the next: square_avg (RMSprop) is
# scaled by alpha twice and then gets both gradient terms, Adagrad's sum gets both g^2 terms (and its step count
# both increments) before either update, so both updates use the same final state.
# Exit 0: the deviation still holds; 1: it no longer does; 2: no torch.
import sys, warnings
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
warnings.simplefilter("ignore")  # "optimizer contains a parameter group with duplicate parameters"
print("torch", torch.__version__)
ok = True
for cls, key in ((torch.optim.RMSprop, "square_avg"), (torch.optim.Adagrad, "sum")):
    seen = {}
    for foreach in (False, True):
        p = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
        opt = cls([p, p], lr=0.1, foreach=foreach)
        p.backward()                            # p.grad = 1
        opt.step()
        s = opt.state[p]
        seen[foreach] = (p.item(), s[key].item())
        print("%-7s foreach=%-5s p: %.12f  %s: %.12f  step: %d"
              % (cls.__name__, foreach, p.item(), key, s[key].item(), int(s["step"])))
    ok = ok and seen[False] != seen[True]
sys.exit(0 if ok else 1)
