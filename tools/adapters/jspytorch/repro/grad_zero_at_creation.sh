#!/bin/bash
# js-pytorch 0.7.2 gives every tensor created with requires_grad = true a zero grad in its constructor
# (`this._grad = zeros(this.shape)`): .grad is [0, 0] before any backward. PyTorch: the grad is None (undefined)
# until the first backward that reaches the parameter (SEMANTICS §2.1, §3.1), and a None grad is what makes
# optimizer.step() skip a parameter (§4.3). A backward adds into that +0, so a first gradient of -0 becomes +0 where
# PyTorch's first backward keeps -0 (§9.5): the grad of square at w = 0 seeded -0.5 is +0 here, -0 in PyTorch.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
const atCreation = w.grad;                          // the library's .grad getter
w.mul(2).sum();                                     // a forward that does not backpropagate
const v = new torch.Tensor([0.0], true);
v.pow(2).backward(new torch.Tensor([-0.5], false));  // d/dv v^2 = 2 v dz = -0 at v = 0
console.log(JSON.stringify({ creation: atCreation === undefined ? null : atCreation,
                             after_forward: w.grad === undefined ? null : w.grad,
                             minus_zero_grad_sign: Math.sign(1 / v.grad[0]) }));
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
v = torch.tensor([0.0], dtype=torch.float64, requires_grad=True)
v.pow(2).backward(torch.tensor([-0.5], dtype=torch.float64))
t_sign = math.copysign(1, v.grad[0].item())
print("js-pytorch: grad at creation %s, after a forward %s; first grad of v^2 at 0 seeded -0.5: %s0" % (
    js["creation"], js["after_forward"], "-" if js["minus_zero_grad_sign"] < 0 else "+"))
print("torch %s: grad at creation %s, after a forward %s; first grad of v^2 at 0 seeded -0.5: %s0" % (
    torch.__version__, t_creation, t_forward, "-" if t_sign < 0 else "+"))
sys.exit(0 if js["creation"] is not None and t_creation is None and js["minus_zero_grad_sign"] > 0 and t_sign < 0 else 1)
PY
