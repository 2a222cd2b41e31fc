# torch 1.13: a parameter listed twice in one SGD group with weight_decay (no momentum). foreach=False (and LibTorch)
# updates twice in sequence, the second L2 term reading the once-updated value; foreach=True computes both
# d_p = g + weight_decay * p from the value before the step (torch._foreach_add(grads, params, ...)), then applies both.
import torch, warnings
warnings.simplefilter("ignore")  # "optimizer contains a parameter group with duplicate parameters"
print("torch", torch.__version__)
for wd in (0.0, 1.0):
    for foreach in (False, True):
        p = torch.tensor(0.0, requires_grad=True)
        opt = torch.optim.SGD([p, p], lr=1.0, weight_decay=wd, foreach=foreach)
        p.backward()                            # p.grad = 1
        opt.step()
        print("weight_decay=%-3s foreach=%-5s p after one step: %s   (expected by sequential semantics: %s)"
              % (wd, foreach, p.item(), -2.0 if wd == 0 else -1.0))
