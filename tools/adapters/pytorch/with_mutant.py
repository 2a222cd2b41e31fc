"""Runs a driver with a framework mutant planted first: python3 with_mutant.py MUTANT.py DRIVER.py [ARGS...].

The mutant (tools/adapters/pytorch/mutants/*.py) monkeypatches torch before the driver imports anything else, as
`node -r MUTANT driver.js` does for the JavaScript adapters (tools/adapters/check_adapter_mutants.sh).
"""
import runpy
import sys

if len(sys.argv) < 3:
    sys.exit("usage: with_mutant.py MUTANT.py DRIVER.py [ARGS...]")
mutant, driver = sys.argv[1], sys.argv[2]
runpy.run_path(mutant, run_name="lockstep_mutant")
sys.argv = [driver] + sys.argv[3:]
runpy.run_path(driver, run_name="__main__")
