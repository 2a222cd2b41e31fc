# The Python side of optimizer_archive.cc (issue 32): optimizer.state_dict() / load_state_dict() of Adam and SGD:
# a resumed run against an uninterrupted one, options restored or kept, groups and shapes that differ, an empty state
# loaded over a stepped one. Run: python3 optimizer_state_dict.py (1.13 or 2.x).
import torch

def grad_step(opt, w):
    opt.zero_grad()
    (w * w * w).sum().backward()
    opt.step()

def attempt(what, f):
    try:
        f()
        print(f"  {what}: accepted")
    except Exception as e:
        print(f"  {what}: threw {type(e).__name__}: {str(e).splitlines()[0][:160]}")

print(torch.__version__)
for name, make in (("Adam lr 0.1", lambda p: torch.optim.Adam(p, lr=0.1)),
                   ("SGD lr 0.1 momentum 0.9", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))):
    a = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    whole = make([a])
    for _ in range(3): grad_step(whole, a)
    b = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    first = make([b])
    for _ in range(2): grad_step(first, b)
    saved = first.state_dict()
    print(name, {k: (v if k != "state" else {i: {s: (t.tolist() if torch.is_tensor(t) else t) for s, t in st.items()} for i, st in v.items()}) for k, v in saved.items()})
    resumed = make([b])
    resumed.load_state_dict(saved)
    grad_step(resumed, b)
    print(f"  uninterrupted {a.tolist()} resumed {b.tolist()} equal {torch.equal(a, b)}")
b = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
c = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
first = torch.optim.Adam([b], lr=0.1)
grad_step(first, b)
saved = first.state_dict()
other = torch.optim.Adam([b], lr=0.5, amsgrad=True)
other.load_state_dict(saved)
print(f"  loaded into Adam(lr 0.5, amsgrad): lr {other.param_groups[0]['lr']} amsgrad {other.param_groups[0]['amsgrad']}")
attempt("a step after it", lambda: grad_step(other, b))
attempt("into Adam over two parameters", lambda: torch.optim.Adam([b, c], lr=0.1).load_state_dict(saved))
o = torch.optim.Adam([c], lr=0.1)
attempt("into Adam over another parameter of another shape", lambda: o.load_state_dict(saved))
print(f"  its exp_avg: {o.state[c]['exp_avg'].tolist() if c in o.state else None}")
attempt("a step after it", lambda: grad_step(o, c))
g2 = torch.optim.Adam([b], lr=0.1); g2.add_param_group({"params": [c]})
attempt("into Adam with two groups", lambda: g2.load_state_dict(saved))
attempt("an Adam state into SGD", lambda: torch.optim.SGD([b], lr=0.1).load_state_dict(saved))
fresh = torch.optim.Adam([b], lr=0.1)
empty = fresh.state_dict()
stepped = torch.optim.Adam([b], lr=0.1)
grad_step(stepped, b)
stepped.load_state_dict(empty)
print(f"  an empty state loaded over a stepped Adam: state entries {len(stepped.state)}")
