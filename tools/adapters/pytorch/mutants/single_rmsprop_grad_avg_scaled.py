"""A planted bug in torch.optim itself: after every RMSprop step the mean of the gradient grad_avg (centered) is 1.5
times the library's. Guards the grad_avg entry of fixtures/expectations/pytorch-python.json (and, run by
foreach_rmsprop_grad_avg_scaled.py, that of -foreach.json): expected inf, actual NaN, 2.x. They accept the NaN of lerp
over an infinite grad, never a mean of another size."""
import os
import runpy

import torch

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_state_scaling.py"))["scale_after_step"](
    (torch.optim.RMSprop,), "grad_avg")
