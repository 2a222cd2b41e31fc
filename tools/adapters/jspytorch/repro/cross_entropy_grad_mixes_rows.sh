#!/bin/bash
# js-pytorch 0.7.2's nn.CrossEntropyLoss gives logits of more than one row a wrong gradient: for logits
# [[0, 0], [0, 1]] and targets [0, 0] it gives [[-0.25, 0.134], [-0.25, 0.366]], where PyTorch's (softmax - one_hot) / N
# is [[-0.25, 0.25], [-0.366, 0.366]]: each row's gradient is not its own row's softmax. The loss itself is right.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const x = new torch.Tensor([[0.0, 0.0], [0.0, 1.0]], true);
const loss = new torch.nn.CrossEntropyLoss().forward(x, new torch.Tensor([0, 0]));
loss.backward();
console.log(JSON.stringify({ loss: loss.data, grad: x._grad.data }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
import torch.nn.functional as F
js = json.loads(os.environ["JS_OUT"])
x = torch.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=torch.float64, requires_grad=True)
loss = F.cross_entropy(x, torch.tensor([0, 0]))
loss.backward()
t_loss, t_grad = loss.item(), x.grad.tolist()
js_loss = js["loss"][0] if isinstance(js["loss"], list) else js["loss"]
print("js-pytorch: loss %s, grad %s" % (js_loss, js["grad"]))
print("torch %s: loss %s, grad %s" % (torch.__version__, t_loss, t_grad))
same_loss = math.isclose(js_loss, t_loss, rel_tol=1e-12)
grad_off = any(not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
               for ra, rb in zip(js["grad"], t_grad) for a, b in zip(ra, rb))
sys.exit(0 if same_loss and grad_off else 1)
PY
