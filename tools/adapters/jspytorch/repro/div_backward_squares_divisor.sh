#!/bin/bash
# js-pytorch 0.7.2 Div.backward computes the divisor's gradient as dz * -(a / b^2) with b^2 = b * b formed first:
# b^2 overflows for |b| > ~1.3e154 (the gradient becomes 0) and underflows for |b| < ~1.5e-154 (it becomes
# +-Infinity), where PyTorch's -dz * a / b / b stays finite (SEMANTICS §2, §9; fixtures op-div-large-f64,
# op-div-tiny-f64). A precision deviation: a finite gradient replaced by 0 or an infinity.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const a = new torch.Tensor([1e-200, 1e300], false);
const b = new torch.Tensor([1e-170, 1e200], true);
a.div(b).sum().backward();
console.log(JSON.stringify({ grad: b.grad.map((v) => (Number.isFinite(v) ? v : String(v))) }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
a = torch.tensor([1e-200, 1e300], dtype=torch.float64)
b = torch.tensor([1e-170, 1e200], dtype=torch.float64, requires_grad=True)
(a / b).sum().backward()
t = b.grad.tolist()
print("d/db sum(a / b), a = [1e-200, 1e300], b = [1e-170, 1e200]: js-pytorch %s | torch %s %s" % (js["grad"], torch.__version__, t))
j = [float(v) for v in js["grad"]]
sys.exit(0 if all(math.isfinite(v) for v in t) and (math.isinf(j[0]) and j[1] == 0) else 1)
PY
