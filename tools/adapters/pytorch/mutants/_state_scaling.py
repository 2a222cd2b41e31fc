"""What the planted bugs that scale an optimizer's state entry share (not a mutant itself: check_modes.sh runs only
MODE_*.py): after every step of the given classes, the state entry `key` of each parameter is `factor` times the
library's."""
import torch


def scale_after_step(classes, key, factor=1.5):
    for cls in classes:
        def wrapped(self, *args, _step=cls.step, **kwargs):
            result = _step(self, *args, **kwargs)
            with torch.no_grad():
                for state in self.state.values():
                    if isinstance(state, dict) and state.get(key) is not None:
                        state[key].mul_(factor)
            return result
        cls.step = wrapped

