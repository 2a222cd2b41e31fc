"""single_adam_exp_avg_scaled.py for the fused mode (check_modes.sh picks a mode's mutants by name): guards the
exp_avg entry of fixtures/expectations/pytorch-python-fused.json."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "single_adam_exp_avg_scaled.py"),
               run_name="lockstep_mutant")
