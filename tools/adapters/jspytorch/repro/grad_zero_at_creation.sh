#!/bin/bash
# js-pytorch 0.7.2 gives every tensor created with requires_grad = true a zero grad in its constructor
# (`this._grad = zeros(this.shape)`): .grad is [0, 0] before any backward. PyTorch: the grad is None (undefined)
# until the first backward that reaches the parameter (SEMANTICS §2.1, §3.1), and a None grad is what makes
# optimizer.step() skip a parameter (§4.3).
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
const atCreation = w.grad;                          // the library's .grad getter
w.mul(2).sum();                                     // a forward that does not backpropagate
console.log(JSON.stringify({ creation: atCreation === undefined ? null : atCreation,
                             after_forward: w.grad === undefined ? null : w.grad }));
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
t_creation = w.grad
(w * 2).sum()
t_forward = w.grad
print("js-pytorch: grad at creation %s, after a forward %s" % (js["creation"], js["after_forward"]))
print("torch %s: grad at creation %s, after a forward %s" % (torch.__version__, t_creation, t_forward))
sys.exit(0 if js["creation"] is not None and t_creation is None else 1)
PY
