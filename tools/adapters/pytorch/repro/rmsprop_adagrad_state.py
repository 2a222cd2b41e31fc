# torch 1.13 (Python) against LibTorch 1.13 (C++), SEMANTICS §14.2 and §15.2. Exit 0: the Python behaviour below
# still holds; 1: it no longer does; 2: torch is missing.
#  - Adagrad creates its state in the constructor with the DEFAULTS' initial_accumulator_value (a group's own
#    value is ignored), as LibTorch does;
#  - a parameter added by add_param_group has no Adagrad state: Python's step raises KeyError('sum') (LibTorch:
#    an internal assertion, after updating the parameters before it);
#  - RMSprop turning momentum (or centered) on after the state exists: Python raises KeyError before counting
#    the step or touching square_avg (LibTorch counts the step and updates square_avg, then fails).
import sys
try:
    import torch
except ImportError:
    print("torch is not installed"); sys.exit(2)
print("torch", torch.__version__)
ok = True

a = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
b = torch.tensor([5.0], dtype=torch.float64, requires_grad=True)
c = torch.tensor([7.0], dtype=torch.float64, requires_grad=True)
ada = torch.optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.25}], lr=0.1,
                          initial_accumulator_value=2.0)
sum_b = ada.state[b]["sum"].tolist()
print("Adagrad: state before any step:", len(ada.state), "params; b's sum", sum_b, "(its group says 0.25)")
ok = ok and len(ada.state) == 2 and sum_b == [2.0]
ada.add_param_group({"params": [c]})
(a.sum() + b.sum() + c.sum()).backward()
try:
    ada.step()
    print("Adagrad: step with an added parameter succeeded"); ok = False
except KeyError as e:
    print("Adagrad: step with an added parameter raises KeyError", e, "; a =", a.tolist(), "b =", b.tolist())

r = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
rms = torch.optim.RMSprop([r], lr=0.1)
r.sum().backward()
rms.step()
before = (int(rms.state[r]["step"]), rms.state[r]["square_avg"].tolist())
rms.param_groups[0]["momentum"] = 0.9
try:
    rms.step()
    print("RMSprop: momentum turned on later succeeded"); ok = False
except KeyError as e:
    after = (int(rms.state[r]["step"]), rms.state[r]["square_avg"].tolist())
    print("RMSprop: momentum turned on later raises KeyError", e, "; step and square_avg before", before, "after", after)
    ok = ok and before == after
sys.exit(0 if ok else 1)
