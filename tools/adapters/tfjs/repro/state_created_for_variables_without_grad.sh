#!/bin/bash
# tfjs 4.22's MomentumOptimizer and AdamOptimizer create their accumulators (zeros) for every variable of the
# applyGradients list at the first call, also for one whose gradient is null (it is then skipped); torch creates a
# parameter's state lazily at its first step with a grad (SEMANTICS 5.3, 6.2). Numerically equal afterwards (the first
# momentum update of a zero buffer is the grad), but the state exists. Pinned by rnd-467877072f33 and rnd-8c2011e7b34d.
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
  const a = tf.variable(tf.tensor1d([1]), true, 'a'), b = tf.variable(tf.tensor1d([1]), true, 'b');
  const res = {};
  for (const [kind, opt] of [['momentum', tf.train.momentum(0.1, 0.9)], ['adam', tf.train.adam(0.1)]]) {
    opt.applyGradients([{name: 'a', tensor: tf.tensor1d([1])}, {name: 'b', tensor: null}]);
    const w = await opt.getWeights();
    res[kind] = w.slice(1).filter(x => x.name.startsWith('b/')).map(x => x.name + '=' + vals(x.tensor));
  }
  out(res);
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
a = torch.tensor([1.0], requires_grad=True); b = torch.tensor([1.0], requires_grad=True)
ref = {}
for kind, opt in (("momentum", torch.optim.SGD([a, b], lr=0.1, momentum=0.9, foreach=False)),
                  ("adam", torch.optim.Adam([a, b], lr=0.1, foreach=False))):
    a.grad = torch.tensor([1.0]); b.grad = None
    opt.step()
    ref[kind] = {k: (v.tolist() if torch.is_tensor(v) else v) for k, v in opt.state[b].items()}
print("one step with a grad for a and none for b: b's optimizer state")
for kind in ("momentum", "adam"):
    print("  %-8s %-16s %s" % (kind, tv + ":", t[kind]))
    print("  %-8s %-16s %s" % (kind, pv + ":", ref[kind] or "{} (no state)"))
report(all(t[k] for k in ("momentum", "adam")) and not any(ref.values()))
PY
