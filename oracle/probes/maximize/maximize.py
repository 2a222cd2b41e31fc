"""Black-box probe of `maximize` in PyTorch's Python API (SEMANTICS §20): which optimizers take it, what the step
does with it, whether .grad changes, what the state holds. Run with Debian's python3-torch (1.13) and in the
Debian 13 chroot (2.6): run.sh."""
import torch

print(torch.__version__)


def show(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def probe(name, make, steps=2):
    for maximize in (False, True):
        w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        try:
            opt = make([w], maximize)
        except TypeError as e:
            print(f"{name} maximize={maximize}: TypeError {e}")
            continue
        for s in range(steps):
            w.grad = torch.tensor([2.0, 4.0], dtype=torch.float64)
            g = w.grad
            opt.step()
            state = {k: (None if v is None else show(v) if torch.is_tensor(v) and v.numel() > 1 else float(v))
                     for k, v in opt.state[w].items()}
            print(f"{name} maximize={maximize} step {s + 1}: w={show(w)} grad={show(w.grad)} same_grad={w.grad is g} "
                  f"state={state}")


probe("SGD momentum 0.9", lambda p, m: torch.optim.SGD(p, lr=0.1, momentum=0.9, maximize=m))
probe("SGD plain", lambda p, m: torch.optim.SGD(p, lr=0.1, maximize=m), steps=1)
probe("SGD weight_decay 0.5", lambda p, m: torch.optim.SGD(p, lr=0.1, weight_decay=0.5, maximize=m), steps=1)
probe("Adam", lambda p, m: torch.optim.Adam(p, lr=0.1, maximize=m))
probe("Adam weight_decay 0.5", lambda p, m: torch.optim.Adam(p, lr=0.1, weight_decay=0.5, maximize=m), steps=1)
probe("AdamW", lambda p, m: torch.optim.AdamW(p, lr=0.1, maximize=m))
probe("RMSprop momentum 0.5", lambda p, m: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, maximize=m))
probe("Adagrad", lambda p, m: torch.optim.Adagrad(p, lr=0.1, maximize=m))
probe("LBFGS", lambda p, m: torch.optim.LBFGS(p, lr=0.1, maximize=m), steps=0)
print("defaults:", {n: getattr(torch.optim, n)([torch.zeros(1, requires_grad=True)]).defaults.get("maximize")
                     for n in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS") if n != "SGD"},
      "SGD:", torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1).defaults.get("maximize"))
