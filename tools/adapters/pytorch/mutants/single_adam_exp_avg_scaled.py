"""A planted bug in torch.optim itself: after every Adam/AdamW step the first moment exp_avg is 1.5 times the
library's. Guards the exp_avg entry of fixtures/expectations/pytorch-python.json (and, run by foreach_ and
fused_adam_exp_avg_scaled.py, those of -foreach.json and -fused.json): expected inf, actual NaN, 2.x. They accept the
NaN of lerp over an infinite grad, never a moment of another size."""
import os
import runpy

import torch

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_state_scaling.py"))["scale_after_step"](
    (torch.optim.Adam, torch.optim.AdamW), "exp_avg")
