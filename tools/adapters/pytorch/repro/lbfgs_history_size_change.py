# torch's Python LBFGS against LibTorch's C++ LBFGS, history_size changed between steps (SEMANTICS §16.1): they agree.
# The same four runs as oracle/probes/lbfgs/history_capacity.cc (the C++ side, the same on LibTorch 1.13 and 2.6):
#   C++ keeps the history's capacity of its first use: raising 2 -> 4 after the first two-loop fails the next step
#   (vector::_M_range_check) with 3 pairs held and n_iter counted; lowering 3 -> 1 fails it too (4 pairs); lowering
#   100 -> 2 never drops a pair. Python fails the same steps at the same point ("list assignment index out of range",
#   kind other in both), with the same pairs held and the same count.
# Exit 0: the Python behaviour below holds (checked with python3-torch 1.13); 1: it no longer does; 2: no torch.
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)


def run(name, h0, first_iters, h1, steps):
    x = torch.tensor([1.5, -0.5, 2.0, 0.25], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([x], lr=0.5, max_iter=first_iters, history_size=h0)

    def closure():
        opt.zero_grad()
        loss = (x * x * x * x).sum() + (x * x).sum()
        loss.backward()
        return loss
    opt.step(closure)
    st = opt.state[x]
    print("%s: after first step n_iter=%d pairs=%d" % (name, st["n_iter"], len(st["old_dirs"])))
    opt.param_groups[0]["history_size"] = h1
    opt.param_groups[0]["max_iter"] = 1
    pairs = []
    for s in range(steps):
        try:
            opt.step(closure)
            pairs.append(len(st["old_dirs"]))
            print("  step %d ok pairs=%d" % (s, pairs[-1]))
        except Exception as e:  # noqa: BLE001
            print("  step %d error pairs=%d n_iter=%d: %s" % (s, len(st["old_dirs"]), st["n_iter"], e))
            pairs.append(("error", len(st["old_dirs"]), st["n_iter"]))
            break
    return pairs


ok = run("2->4 after two-loop", 2, 4, 4, 6) == [("error", 3, 5)]
ok &= run("2->4 before any two-loop (max_iter 1)", 2, 1, 4, 6) == [1, 2, 3, 4, 4, 4]
ok &= run("3->1 after two-loop", 3, 5, 1, 6) == [("error", 4, 6)]
ok &= run("100->2 after two-loop", 100, 5, 2, 6) == [5, 6, 7, 8, 9, 10]
print("as described" if ok else "CHANGED: the Python behaviour differs from the description above")
sys.exit(0 if ok else 1)
