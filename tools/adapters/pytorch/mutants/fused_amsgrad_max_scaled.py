"""A planted bug in torch.optim itself: after every Adam/AdamW step the running maximum max_exp_avg_sq is 1.5 times
the library's. Guards the max_exp_avg_sq entry of fixtures/expectations/pytorch-python-fused.json (expected NaN,
actual finite): it accepts the lost NaN, never a maximum of another size."""
import os
import runpy

import torch

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_state_scaling.py"))["scale_after_step"](
    (torch.optim.Adam, torch.optim.AdamW), "max_exp_avg_sq")
