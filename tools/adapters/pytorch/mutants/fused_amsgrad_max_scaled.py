"""A planted bug in torch.optim itself: after every Adam/AdamW step the running maximum max_exp_avg_sq is 1.5 times
the library's. Guards the max_exp_avg_sq entry of fixtures/expectations/pytorch-python-fused.json (expected NaN,
actual finite): it accepts the lost NaN, never a maximum of another size."""
import torch


def _scaling(step):
    def wrapped(self, *args, **kwargs):
        result = step(self, *args, **kwargs)
        with torch.no_grad():
            for state in self.state.values():
                if isinstance(state, dict) and state.get("max_exp_avg_sq") is not None:
                    state["max_exp_avg_sq"].mul_(1.5)
        return result
    return wrapped


for cls in (torch.optim.Adam, torch.optim.AdamW):
    cls.step = _scaling(cls.step)
