#!/bin/bash
# tfjs 4.22's gradient of relu is dy * step(x) (tfjs-core gradients/Relu_grad), a product with a 0/1 mask: NaN at
# x = NaN (torch passes dy on) and NaN where dy is +-inf and x <= 0 (torch: 0). Pinned by op-relu-nonfinite-f32.
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
  const x = tf.tensor1d([NaN, 0, -1, 2]);
  const f = t => tf.relu(t);
  out({ones: vals(tf.grads(f)([x], tf.ones([4]))[0]), inf: vals(tf.grads(f)([x], tf.fill([4], Infinity))[0])});
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
ref = {}
for name, dy in (("ones", 1.0), ("inf", math.inf)):
    x = torch.tensor([math.nan, 0.0, -1.0, 2.0], requires_grad=True)
    torch.relu(x).backward(torch.full((4,), dy))
    ref[name] = x.grad.tolist()
print("d relu(x)/dx * dy at x = [NaN, 0, -1, 2]")
for name in ("ones", "inf"):
    print("  dy = %-4s %-16s %s" % (name, tv + ":", num(t[name])))
    print("  dy = %-4s %-16s %s" % (name, pv + ":", ref[name]))
ones, inf = num(t["ones"]), num(t["inf"])
# NaN at the NaN input where torch passes dy on; NaN for dy = inf at x <= 0 where torch gives 0
report(math.isnan(ones[0]) and ref["ones"][0] == 1 and math.isnan(inf[2]) and ref["inf"][2] == 0)
PY
