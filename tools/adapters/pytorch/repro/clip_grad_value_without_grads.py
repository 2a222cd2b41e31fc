# torch 2.x, torch.nn.utils.clip_grad_value_ over parameters none of which has a grad (or over none at all) raises
# (RuntimeError "Expected !nested_tensorlist[0].empty() to be true", from the grouped foreach clamp it takes by
# default and with foreach=False alike, where 1.13 and LibTorch's C++ clip_grad_value_ do nothing: an undefined grad
# is skipped, SEMANTICS 18.5). Found by lockstep's live run through tools/adapters/pytorch_driver.py on 2.6 (issue 32).
# Prints each call; exits 0 while the deviation reproduces, 1 once it does not.
import sys
import torch
print("torch", torch.__version__)
def call(params, **kw):
    try:
        torch.nn.utils.clip_grad_value_(params, 1.0, **kw)
        return "ok"
    except (RuntimeError, TypeError, ValueError) as e:
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
p = torch.zeros(2, requires_grad=True)  # no grad yet
q = torch.zeros(1, requires_grad=True)
q.grad = torch.full((1,), 3.0)
results = {"a parameter without grad": call([p]), "no parameter": call([]),
           "one with a grad beside": call([p, q])}
for what, r in results.items():
    print("%-26s %s" % (what + ":", r))
print("q.grad after the last call:", q.grad.tolist())
reproduces = results["a parameter without grad"] != "ok" and results["one with a grad beside"] == "ok"
print("deviation reproduces" if reproduces else "no deviation")
sys.exit(0 if reproduces else 1)
