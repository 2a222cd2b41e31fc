#!/bin/bash
# tfjs 4.22's optimizers index their accumulators by the position in applyGradients' list, not by variable
# (accumulatedFirstMoment[i], accumulations[i]): a variable listed twice gets two states (each step 1, exp_avg
# 0.1 g) where torch keeps one (step 2, exp_avg 0.19 g, SEMANTICS 7.4), and the same variables in another order
# swap their moments. Pinned by the named case sem7-param-twice-in-group-has-one-state.
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
  const w = tf.variable(tf.tensor1d([1]), true, 'w');
  const opt = tf.train.adam(0.0);
  opt.applyGradients([{name: 'w', tensor: tf.tensor1d([1])}, {name: 'w', tensor: tf.tensor1d([1])}]);
  const ws = await opt.getWeights();
  const a = tf.variable(tf.tensor1d([0]), true, 'a'), b = tf.variable(tf.tensor1d([0]), true, 'b');
  const o2 = tf.train.adam(0.0);
  o2.applyGradients([{name: 'a', tensor: tf.tensor1d([1])}, {name: 'b', tensor: tf.tensor1d([-1])}]);
  o2.applyGradients([{name: 'b', tensor: tf.tensor1d([-1])}, {name: 'a', tensor: tf.tensor1d([1])}]);
  const w2 = await o2.getWeights();
  out({twice: ws.slice(1).filter(x => x.name.endsWith('/m')).map(x => vals(x.tensor)[0]), iterations: opt.iterations,
       swapped: w2.slice(1).filter(x => x.name.endsWith('/m')).map(x => x.name + '=' + vals(x.tensor)[0])});
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
import warnings; warnings.simplefilter("ignore")  # "duplicate parameters" warning
w = torch.tensor([1.0], requires_grad=True)
opt = torch.optim.Adam([w, w], lr=0.0, foreach=False)
w.grad = torch.tensor([1.0]); opt.step()
s = opt.state[w]
print("Adam(lr 0) over [w, w], one step with grad 1: exp_avg and step")
print("  %-16s exp_avg per slot %s, step %d" % (tv + ":", num(t["twice"]), t["iterations"]))
print("  %-16s exp_avg %s, step %d" % (pv + ":", s["exp_avg"].tolist(), int(s["step"])))
print("Adam over a (grad 1), b (grad -1), the second step listing them as [b, a]: exp_avg")
print("  %-16s %s" % (tv + ":", t["swapped"]))
a = torch.tensor([0.0], requires_grad=True); b = torch.tensor([0.0], requires_grad=True)
o2 = torch.optim.Adam([a, b], lr=0.0, foreach=False)
for _ in range(2):
    a.grad, b.grad = torch.tensor([1.0]), torch.tensor([-1.0])
    o2.step()
print("  %-16s a/m=%r, b/m=%r (state per parameter)" % (pv + ":", o2.state[a]["exp_avg"].item(), o2.state[b]["exp_avg"].item()))
report(len(t["twice"]) == 2 and not same(num(t["twice"])[0], s["exp_avg"].item(), 1e-6))
PY
