# torch 1.13: RMSprop(foreach=True) and Adagrad(foreach=True) with weight_decay != 0 add weight_decay * p into
# p.grad in place (_multi_tensor_rmsprop / _multi_tensor_adagrad: torch._foreach_add_(grads, params,
# alpha=weight_decay)), as foreach Adam does; foreach=False and LibTorch (SEMANTICS 14.3, 15.3: g + weight_decay * p
# is a new tensor) leave p.grad alone. Through aliased grads (two zero-dim parameters whose grads one backward made
# the same tensor, SEMANTICS 3) the changed grad reaches the other parameter: its group, stepped next, reads
# g + weight_decay * p0 (lockstep: seed 1, random-83 in --mode foreach).
# Exit 0: the deviation still holds; 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
ok = True
for cls in (torch.optim.RMSprop, torch.optim.Adagrad):
    grads = {}
    for foreach in (False, True):
        p = torch.tensor([1.0, -3.0], dtype=torch.float64, requires_grad=True)
        opt = cls([p], lr=0.1, weight_decay=0.5, foreach=foreach)
        p.sum().backward()                      # p.grad = [1, 1]
        held = p.grad                           # a handle to the grad tensor
        opt.step()
        grads[foreach] = p.grad.tolist()
        print("%-7s foreach=%-5s grad after the step: %-12s held handle: %-12s p: %s"
              % (cls.__name__, foreach, grads[foreach], held.tolist(), [round(x, 9) for x in p.tolist()]))
    ok = ok and grads[False] == [1.0, 1.0] and grads[True] == [1.5, -0.5]

# Aliased grads: p0 and p1 zero-dim, one backward of p0.sum() + p1.sum() gives both the same grad tensor; p0's
# group has weight_decay, p1's has none.
for cls, key in ((torch.optim.RMSprop, "square_avg"), (torch.optim.Adagrad, "sum")):
    seen = {}
    for foreach in (False, True):
        p0 = torch.tensor(1.0, requires_grad=True)
        p1 = torch.tensor(0.0, requires_grad=True)
        opt = cls([{"params": [p0], "weight_decay": 1.0}, {"params": [p1]}], lr=0.1, foreach=foreach)
        (p0.sum() + p1.sum()).backward()
        shared = p0.grad.data_ptr() == p1.grad.data_ptr()
        opt.step()
        seen[foreach] = opt.state[p1][key].item()
        print("%-7s foreach=%-5s grads shared: %-5s p1's %s after the step: %g  p1: %.9f"
              % (cls.__name__, foreach, shared, key, seen[foreach], p1.item()))
    ok = ok and seen[False] != seen[True]
sys.exit(0 if ok else 1)
