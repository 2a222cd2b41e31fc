"""A planted bug in torch.optim itself: after every RMSprop step the mean of the gradient grad_avg (centered) is 1.5
times the library's. Guards the grad_avg entry of fixtures/expectations/pytorch-python.json (and, run by
foreach_rmsprop_grad_avg_scaled.py, that of -foreach.json): expected inf, actual NaN, 2.x. They accept the NaN of lerp
over an infinite grad, never a mean of another size."""
import torch


def _scaling(step):
    def wrapped(self, *args, **kwargs):
        result = step(self, *args, **kwargs)
        with torch.no_grad():
            for state in self.state.values():
                if isinstance(state, dict) and state.get("grad_avg") is not None:
                    state["grad_avg"].mul_(1.5)
        return result
    return wrapped


torch.optim.RMSprop.step = _scaling(torch.optim.RMSprop.step)
