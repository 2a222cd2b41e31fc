"""single_rmsprop_grad_avg_scaled.py for the foreach mode (check_modes.sh picks a mode's mutants by name): guards the
grad_avg entry of fixtures/expectations/pytorch-python-foreach.json."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "single_rmsprop_grad_avg_scaled.py"),
               run_name="lockstep_mutant")
