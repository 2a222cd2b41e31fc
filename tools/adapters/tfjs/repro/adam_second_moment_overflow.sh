#!/bin/bash
# tfjs 4.22's Adam updates the second moment as v * beta2 + square(g) * (1 - beta2) (tfjs-core AdamOptimizer): g^2
# overflows float32 for |g| > 1.8e19 and exp_avg_sq becomes inf where torch's (1 - beta2) * g * g (fused) is finite.
# Found by lockstep (seed 13, --max-size 60, random-58); pinned by the named case
# sem6-adam-second-moment-weighs-before-squaring (random programs: masked by the Adam step-count entry's exp_avg*).
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
  const opt = tf.train.adam(0.001, 0.9, 0.999, 1e-8);
  opt.applyGradients([{name: 'w', tensor: tf.tensor1d([3.6893488e19])}]);
  out({v: vals((await opt.getWeights())[2].tensor)});
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
w = torch.tensor([1.0], requires_grad=True)
opt = torch.optim.Adam([w], lr=0.001, foreach=False)
w.grad = torch.tensor([3.6893488e19])
opt.step()
ref = opt.state[w]["exp_avg_sq"].tolist()
print("Adam, one step with grad 3.6893488e19 (float32): exp_avg_sq")
print("  %-16s %s" % (tv + ":", num(t["v"])))
print("  %-16s %s" % (pv + ":", ref))
report(math.isinf(num(t["v"])[0]) and math.isfinite(ref[0]))
PY
