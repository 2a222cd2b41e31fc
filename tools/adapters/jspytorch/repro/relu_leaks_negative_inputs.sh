#!/bin/bash
# js-pytorch 0.7.2 nn.ReLU multiplies its input by a mask of 1 (x > 0) or 1e-3 (otherwise): a leaky ReLU with
# slope 0.001, so relu(-2) = -0.002 with gradient 0.001. torch.relu (and nn.ReLU) give 0 and gradient 0 for
# x <= 0 (SEMANTICS §2; fixtures op-relu-*-f64).
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const x = new torch.Tensor([-2.0, 0.0, 3.0], true);
const y = new torch.nn.ReLU().forward(x);
y.sum().backward();
console.log(JSON.stringify({ value: y.data, grad: x.grad }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
x = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
y = torch.relu(x)
y.sum().backward()
print("relu([-2, 0, 3]): js-pytorch %s, grad %s" % (js["value"], js["grad"]))
print("                  torch %s %s, grad %s" % (torch.__version__, y.tolist(), x.grad.tolist()))
sys.exit(0 if abs(js["value"][0] - (-0.002)) < 1e-12 and y.tolist()[0] == 0 else 1)  # slope 1e-3 below zero
PY
