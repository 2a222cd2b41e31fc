#!/bin/bash
# tfjs 4.22's MomentumOptimizer.setMomentum(m) sets the field getConfig() reports but not the scalar this.m that
# applyGradients multiplies the accumulator by (built once in the constructor): the optimizer keeps its first
# momentum, torch uses a changed group momentum from the next step (SEMANTICS 7.5). Pinned by the named case
# sem7-momentum-change-applies-at-next-step.
# Prints TensorFlow.js's numbers next to PyTorch's (Debian's /usr/bin/python3 with torch 1.13, whose single-tensor
# torch.optim equals LibTorch 1.13 as lockstep measured); exits 0 while the deviation reproduces, 1 once it does not.
set -u
cd "$(dirname "$0")/.." || exit 2   # tools/adapters/tfjs: node finds @tensorflow/tfjs in ./node_modules
tfjs="$(node - <<'JS'
for (const k of ['log', 'warn', 'info']) console[k] = () => {};
const tf = require('@tensorflow/tfjs');
const out = v => process.stdout.write(JSON.stringify(Object.assign({version: tf.version.tfjs}, v),
  (k, x) => (typeof x === 'number' && !isFinite(x) ? String(x) : x)));
const vals = t => Array.from(t.dataSync());
(async () => {
  await tf.setBackend('cpu'); await tf.ready();
  const w = tf.variable(tf.scalar(0), true, 'w');
  const opt = tf.train.momentum(1.0, 0.5);
  opt.applyGradients([{name: 'w', tensor: tf.scalar(1)}]);
  opt.setMomentum(0.25);
  opt.applyGradients([{name: 'w', tensor: tf.scalar(1)}]);
  const acc = (await opt.getWeights())[1].tensor;
  out({w: vals(w)[0], buf: vals(acc)[0], reported: opt.getConfig().momentum});
})();
JS
)" || { echo "node failed"; exit 2; }
/usr/bin/python3 - "$tfjs" <<'PY'
import json, math, os, sys
def _cannot_run(kind, value, tb):  # a reproduction that cannot run exits 2, not 1 ("no longer reproduces")
    import traceback; traceback.print_exception(kind, value, tb); sys.stdout.flush(); os._exit(2)
sys.excepthook = _cannot_run
import torch
t = json.loads(sys.argv[1], parse_constant=float)
def num(v):
    return [num(x) for x in v] if isinstance(v, list) else float(v)
def same(a, b, tol=0.0):
    a, b = num(a), num(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= tol * max(abs(a), abs(b))
def report(reproduces):
    print("deviation reproduces" if reproduces else "no deviation any more")
    sys.exit(0 if reproduces else 1)
tv, pv = "tfjs " + t["version"], "torch " + torch.__version__
w = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.SGD([w], lr=1.0, momentum=0.5, foreach=False)
w.grad = torch.tensor(1.0); opt.step()
opt.param_groups[0]["momentum"] = 0.25
opt.step()
print("SGD(lr 1, momentum 0.5), grad 1, step; momentum changed to 0.25; step: w, buffer, momentum reported")
print("  %-16s w %s buf %s momentum %s" % (tv + ":", num(t["w"]), num(t["buf"]), t["reported"]))
print("  %-16s w %s buf %s momentum %s" % (pv + ":", w.item(), opt.state[w]["momentum_buffer"].item(),
                                             opt.param_groups[0]["momentum"]))
report(not same(t["buf"], opt.state[w]["momentum_buffer"].item()))
PY
