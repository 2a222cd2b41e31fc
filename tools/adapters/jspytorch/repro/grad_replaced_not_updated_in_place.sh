#!/bin/bash
# js-pytorch 0.7.2 accumulates out of place: Tensor.backward does `this._grad = new Tensor(_add(this._grad.data,
# grad.data))`, and Tensor.zero_grad (which Adam.zero_grad calls) does `this._grad = zeros(this.shape)`. The
# parameter gets a new grad tensor every time; a reference to the old one (PyTorch: `g = p.grad`) keeps the old
# values. PyTorch: a defined grad is accumulated into in place (SEMANTICS §3.2) and zero_grad() zeroes it in place
# (§4.1, set_to_none=False), so the grad keeps its identity and a held reference sees the sum, then the zeros.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const x = new torch.Tensor([1.0, 2.0, 3.0], true);
const opt = new torch.optim.Adam([x]);
x.mul(x).sum().backward();
const held = x._grad;                               // the grad tensor object after the first backward
x.mul(x).sum().backward();
const afterSecond = { same: held === x._grad, grad: x.grad, held: held.data.slice() };
opt.zero_grad();
const afterZero = { same: held === x._grad, grad: x.grad, held: held.data.slice() };
console.log(JSON.stringify({ afterSecond, afterZero }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([x])
(x * x).sum().backward()
held = x.grad
(x * x).sum().backward()
t2 = (held is x.grad, x.grad.tolist(), held.tolist())
opt.zero_grad(set_to_none=False)
t3 = (held is x.grad, x.grad.tolist(), held.tolist())
a, z = js["afterSecond"], js["afterZero"]
print("js-pytorch: 2nd backward: same tensor %s, grad %s, held reference %s" % (a["same"], a["grad"], a["held"]))
print("            zero_grad:    same tensor %s, grad %s, held reference %s" % (z["same"], z["grad"], z["held"]))
print("torch %s: 2nd backward: same tensor %s, grad %s, held reference %s" % ((torch.__version__,) + t2))
print("              zero_grad:    same tensor %s, grad %s, held reference %s" % t3)
sys.exit(0 if (not a["same"] and not z["same"] and t2[0] and t3[0]) else 1)
PY
