"""A planted bug in torch.optim itself: after every Adam/AdamW step the first moment exp_avg is 1.5 times the
library's. Guards the exp_avg entry of fixtures/expectations/pytorch-python.json (and, run by foreach_ and
fused_adam_exp_avg_scaled.py, those of -foreach.json and -fused.json): expected inf, actual NaN, 2.x. They accept the
NaN of lerp over an infinite grad, never a moment of another size."""
import torch


def _scaling(step):
    def wrapped(self, *args, **kwargs):
        result = step(self, *args, **kwargs)
        with torch.no_grad():
            for state in self.state.values():
                if isinstance(state, dict) and state.get("exp_avg") is not None:
                    state["exp_avg"].mul_(1.5)
        return result
    return wrapped


for cls in (torch.optim.Adam, torch.optim.AdamW):
    cls.step = _scaling(cls.step)
