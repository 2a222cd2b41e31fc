#!/bin/bash
# js-pytorch 0.7.2: Tensor.backward() without a gradient seeds ones(shape) whatever the output's shape, so a
# non-scalar output backpropagates as if summed. PyTorch raises "grad can be implicitly created only for scalar
# outputs" (SEMANTICS §2.4, error kind nonscalar_backward) and leaves the grads alone.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0, 3.0], true);
let error = null;
try { w.mul(w).backward(); } catch (e) { error = e.message; }
console.log(JSON.stringify({ error, grad: w.grad }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
w = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
try:
    (w * w).backward()
    t_error = None
except RuntimeError as e:
    t_error = str(e)
print("js-pytorch: (w*w).backward() on shape [3]: error %s, grad %s" % (js["error"], js["grad"]))
print("torch %s: error %r, grad %s" % (torch.__version__, t_error, w.grad))
sys.exit(0 if js["error"] is None and t_error is not None else 1)
PY
