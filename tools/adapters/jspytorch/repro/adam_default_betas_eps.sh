#!/bin/bash
# js-pytorch 0.7.2 optim.Adam(params, lr = 1e-3, reg = 0, betas = [0.9, 0.99], eps = 1e-9): its defaults for
# beta2 and eps differ from PyTorch's Adam (betas (0.9, 0.999), eps 1e-08; SEMANTICS §6.1, named case
# tut000-adam-defaults). A program that leaves them out gets the library's.
# Exit 0: the deviation reproduces; 1: it does not.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const opt = new torch.optim.Adam([new torch.Tensor([1.0], true)]);
console.log(JSON.stringify({ lr: opt.lr, betas: [opt.b1, opt.b2], eps: opt.eps, reg: opt.reg }));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
js = json.loads(os.environ["JS_OUT"])
g = torch.optim.Adam([torch.zeros(1, requires_grad=True)]).param_groups[0]
t = {"lr": g["lr"], "betas": list(g["betas"]), "eps": g["eps"], "weight_decay": g["weight_decay"]}
print("defaults: js-pytorch %s" % js)
print("          torch %s %s" % (torch.__version__, t))
sys.exit(0 if (js["betas"] != t["betas"] or js["eps"] != t["eps"]) else 1)
PY
