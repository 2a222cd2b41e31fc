"""A planted bug in torch.optim itself: Adagrad steps with a learning rate 1.0001 times the group's (the group still
reports its own). Guards the float64 precision entry of fixtures/expectations/pytorch-python-foreach.json (within 4
float32 ULPs of the value's scale): it accepts a float32 learning rate, never an update of another size."""
import torch

_step = torch.optim.Adagrad.step


def step(self, *args, **kwargs):
    saved = [group["lr"] for group in self.param_groups]
    for group in self.param_groups:
        group["lr"] = group["lr"] * 1.0001
    try:
        return _step(self, *args, **kwargs)
    finally:
        for group, lr in zip(self.param_groups, saved):
            group["lr"] = lr


torch.optim.Adagrad.step = step
