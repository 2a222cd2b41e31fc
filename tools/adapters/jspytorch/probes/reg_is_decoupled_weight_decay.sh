#!/bin/bash
# Not a deviation: the probe behind the adapter's mapping of AdamW onto js-pytorch's optim.Adam(params, lr, reg,
# betas, eps). With betas (0, 0) PyTorch's bias corrections are 1 - 0^t = 1, so js-pytorch's missing bias
# correction (repro/adam_no_step_count_no_bias_correction.sh) plays no part and the two updates can be compared
# directly: js-pytorch's `reg` equals AdamW's decoupled weight decay (p *= 1 - lr * wd beside the update,
# SEMANTICS §6.4), not Adam's L2 term (g += wd * p before the moments, §6.3). So the driver declares
# `weight_decay` for adamw (reg = weight_decay) and not for adam.
# Exit 0: reg matches AdamW and not Adam; 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 2
js=$(node - <<'JS'
const { torch } = require('js-pytorch');
const w = new torch.Tensor([1.0, -2.0, 3.0], true);
const opt = new torch.optim.Adam([w], 0.1, 0.5, [0.0, 0.0], 1e-8);
const out = [];
for (let t = 0; t < 3; t++) {
  opt.zero_grad();
  w.backward(new torch.Tensor([0.5, -0.25, 2.0]));
  opt.step();
  out.push(w.data.slice());
}
console.log(JSON.stringify(out));
JS
) || exit 2
JS_OUT="$js" /usr/bin/python3 - <<'PY'
import json, os, sys, torch
js = json.loads(os.environ["JS_OUT"])
res = {}
for cls in (torch.optim.AdamW, torch.optim.Adam):
    w = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    opt = cls([w], lr=0.1, betas=(0.0, 0.0), eps=1e-8, weight_decay=0.5, foreach=False)
    out = []
    for _ in range(3):
        w.grad = torch.tensor([0.5, -0.25, 2.0], dtype=torch.float64)
        opt.step()
        out.append(w.tolist())
    res[cls.__name__] = out
close = lambda a, b: all(abs(x - y) <= 1e-12 * max(1.0, abs(y)) for r, s in zip(a, b) for x, y in zip(r, s))
print("js-pytorch Adam(reg 0.5):        %s" % js)
print("torch AdamW(weight_decay 0.5):   %s" % res["AdamW"])
print("torch Adam(weight_decay 0.5):    %s" % res["Adam"])
print("reg == AdamW's decay: %s; reg == Adam's L2: %s" % (close(js, res["AdamW"]), close(js, res["Adam"])))
sys.exit(0 if close(js, res["AdamW"]) and not close(js, res["Adam"]) else 1)
PY
