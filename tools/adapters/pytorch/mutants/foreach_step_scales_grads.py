"""A planted bug in torch.optim itself: every step leaves each parameter's grad 1.5 times what it was after the
library's own step. Guards the grad entries of fixtures/expectations/pytorch-python-foreach.json (the variants
step.adds_weight_decay_to_grad and sgd.nesterov_adds_momentum_buffer_to_grad): they accept the verified in-place
additions, never a step that changes the grads in another way."""
import torch


def _scaling(step):
    def wrapped(self, *args, **kwargs):
        result = step(self, *args, **kwargs)
        with torch.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(1.5)
        return result
    return wrapped


for cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop, torch.optim.Adagrad):
    cls.step = _scaling(cls.step)
