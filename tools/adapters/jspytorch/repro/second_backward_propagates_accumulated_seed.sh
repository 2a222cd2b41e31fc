#!/bin/bash
# js-pytorch 0.7.2: Tensor.backward adds the incoming gradient into the tensor's own _grad and every node passes
# its *accumulated* _grad to its inputs. The output of a forward and every intermediate node keep their _grad
# from the first backward, so a second backward through the same graph propagates the sum of all seeds so far:
# y = sum(square(w)), w = [1, -2]: two backwards give grads [8, -16] (2w + 6w) instead of [4, -8] (2w + 2w).
# PyTorch (retain_graph=True on the first): the second backward adds the same 2w again (SEMANTICS §2.5, §3.2).
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0], true);
const y = w.pow(2).sum();
y.backward();
const first = w.grad.slice();
y.backward();
const second = w.grad.slice();
y.backward();
console.log(JSON.stringify({ first, second, third: w.grad }));
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
out = []
for _ in range(3):
    y.backward(retain_graph=True)
    out.append(w.grad.tolist())
print("js-pytorch: grads after backward 1, 2, 3 of one output: %s %s %s" % (js["first"], js["second"], js["third"]))
print("torch %s (retain_graph=True): %s %s %s" % (torch.__version__, out[0], out[1], out[2]))
sys.exit(0 if js["second"] != out[1] and js["first"] == out[0] else 1)
PY
