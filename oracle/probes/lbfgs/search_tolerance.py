"""SEMANTICS 16.6, black-box: the strong_wolfe line search's bracket-width test does not read tolerance_change.

A loss whose backward is given a gradient of the wrong sign (mean(w), backward(-2)) makes every trial point worse than
x0 while the slope says it is better, so the zoom shrinks the bracket towards 0 until |b1 - b0| |d|_max falls below
the search's tolerance. With tolerance_change 0, 1e-9 and 1.2e-4 the step makes the same 10 closure calls: the search
stops at 1e-9 each time (with the option read, 0 would run to the 25-call cap and 1.2e-4 would stop after 3 calls).

Run with a torch (Python): python3 oracle/probes/lbfgs/search_tolerance.py; exits 1 where the counts differ.
Seen: 10, 10, 10 on 1.13 (Debian 12) and 2.6 (Debian 13).
"""
import sys

import torch

counts = []
for tolerance_change in [0.0, 1e-9, 1.220703125e-4]:
    w = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w], lr=0.05, tolerance_change=tolerance_change, line_search_fn="strong_wolfe",
                                  max_iter=1)
    calls = [0]

    def closure():
        calls[0] += 1
        optimizer.zero_grad()
        loss = w.mean()
        loss.backward(torch.tensor(-2.0, dtype=torch.float64))
        return loss

    optimizer.step(closure)
    counts.append(calls[0])
    print(torch.__version__, "tolerance_change", tolerance_change, "closure calls", calls[0])
sys.exit(0 if len(set(counts)) == 1 else 1)
