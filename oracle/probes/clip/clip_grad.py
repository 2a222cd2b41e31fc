# The Python side of clip_grad.cc (issue 32): torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on undefined, aliased
# and non-finite grads, each grad printed with its version counter. Run: python3 clip_grad.py (1.13 or 2.x).
import math
import torch

def leaf(v):
    return torch.tensor(v, requires_grad=True)

def show(what, ps):
    parts = []
    for i, p in enumerate(ps):
        if p.grad is None:
            parts.append(f"p{i}=None")
        else:
            parts.append(f"p{i}={[float(x) for x in p.grad.flatten()]} v{p.grad._version}")
    print(f"  {what}: " + " ".join(parts))

def attempt(what, f):
    try:
        f()
    except Exception as e:
        print(f"  {what}: threw {type(e).__name__}: {str(e).splitlines()[0][:160]}")

print(torch.__version__)
for max_norm in (1.0, 10.0, 0.0, -1.0):
    ps = [leaf([1.0]), leaf([1.0]), leaf([1.0])]
    ps[0].grad = torch.tensor([3.0]); ps[1].grad = torch.tensor([4.0])
    n = torch.nn.utils.clip_grad_norm_(ps, max_norm)
    print(f"clip_grad_norm_ max_norm {max_norm}, grads [3] [4] None: returned {n!r}")
    show("after", ps)
for nt in (math.inf, 1.0):
    ps = [leaf([1.0, 1.0]), leaf([1.0])]
    ps[0].grad = torch.tensor([3.0, -5.0]); ps[1].grad = torch.tensor([4.0])
    print(f"norm_type {nt}: returned {torch.nn.utils.clip_grad_norm_(ps, 1.0, nt)!r}")
    show("after", ps)
ps = [leaf([1.0]), leaf([1.0])]
ps[0].grad = torch.tensor([3.0]); ps[1].grad = ps[0].grad
print(f"aliased [3] [3]: returned {torch.nn.utils.clip_grad_norm_(ps, 1.0)!r}")
show("after", ps)
ps = [torch.tensor([1.0], dtype=torch.float64, requires_grad=True), leaf([1.0])]
ps[0].grad = torch.tensor([3.0], dtype=torch.float64); ps[1].grad = torch.tensor([4.0])
attempt("mixed f64/f32", lambda: print(f"mixed f64/f32: returned {torch.nn.utils.clip_grad_norm_(ps, 1.0)!r}"))
show("after", ps)
ps = [leaf([1.0])]
print(f"all None: returned {torch.nn.utils.clip_grad_norm_(ps, 1.0)!r}")
ps = [leaf([1.0, 1.0, 1.0, 1.0]), leaf([1.0])]
ps[0].grad = torch.tensor([3.0, -5.0, 1.0, float('nan')])
torch.nn.utils.clip_grad_value_(ps, 2.5)
show("clip_grad_value_ 2.5", ps)
attempt("clip_value -1", lambda: torch.nn.utils.clip_grad_value_(ps, -1.0))
show("after -1", ps)
