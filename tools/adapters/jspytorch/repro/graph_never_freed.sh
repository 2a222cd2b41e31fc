#!/bin/bash
# js-pytorch 0.7.2 has no retain_graph: its backward never frees what the graph's nodes hold, so a second
# backward through a graph that saved tensors (here square) runs, and adds to the grads, where PyTorch raises
# "Trying to backward through the graph a second time" (SEMANTICS §2.5, error kind backward_through_freed_graph)
# and leaves the grads alone.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
const y = w.pow(2).sum();
y.backward();
let error = null;
try { y.backward(); } catch (e) { error = e.message; }
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
w = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
y = torch.square(w).sum()
y.backward()
try:
    y.backward()
    t_error = None
except RuntimeError as e:
    t_error = str(e).split(".")[0]
print("js-pytorch: second backward without retain_graph: error %s, grad %s" % (js["error"], js["grad"]))
print("torch %s: second backward without retain_graph: error %r, grad %s" % (torch.__version__, t_error, w.grad.tolist()))
sys.exit(0 if js["error"] is None and t_error is not None else 1)
PY
