# torch 2.x, SGD(momentum, fused=True) on the CPU: a parameter whose grad was None at the first step has no momentum
# buffer; when it has a grad at a later step, the fused step fails (TypeError "expected Tensor as element 1 in
# argument 2, but got NoneType") where the single-tensor path (and LibTorch's C++ SGD) create its buffer then
# (SEMANTICS 4.3, 5.3; found by the live run of seed 1, random-237, issue 32). Prints both; exits 0 while the
# deviation reproduces, 1 once it does not, 2 when this torch has no fused CPU path.
import sys
import torch
print("torch", torch.__version__)
def run(**kw):
    p0 = torch.zeros((), requires_grad=True)
    p1 = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p0, p1], lr=0.0, momentum=1.0, **kw)
    p0.grad = torch.ones(())
    opt.step()  # p1's grad is None: no buffer for it
    p1.grad = torch.ones(1)
    try:
        opt.step()
        return "ok"
    except (RuntimeError, TypeError) as e:
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
try:
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, fused=True)
except (RuntimeError, TypeError, ValueError) as e:
    print("no fused SGD here (%s)" % str(e).splitlines()[0][:80])
    sys.exit(2)
single, fused = run(foreach=False), run(fused=True)
print("single: second step", single)
print("fused:  second step", fused)
reproduces = single == "ok" and fused != "ok"
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
