#!/bin/bash
# js-pytorch 0.7.2 optim.Adam's constructor puts zero moments (m, v) on every parameter it is given; they exist
# before any step, also for a parameter that is never stepped. PyTorch creates a parameter's state (step,
# exp_avg, exp_avg_sq) lazily at its first step with a defined grad (SEMANTICS §6.2; named case
# sem6-adam-state-empty-until-first-step).
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
new torch.optim.Adam([w], 0.1);
console.log(JSON.stringify({ m: w.m ? w.m.data : null, v: w.v ? w.v.data : null }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([w], lr=0.1)
print("state after construction: js-pytorch m %s v %s | torch %s %s" % (js["m"], js["v"], torch.__version__, dict(opt.state[w])))
sys.exit(0 if js["m"] is not None and len(opt.state[w]) == 0 else 1)
PY
