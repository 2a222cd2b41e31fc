#!/bin/bash
# LibTorch 1.13 (and torch 1.13) leaves the grads of two 0-d leaves on one storage after add(sum(p0), sum(p1))
# (SEMANTICS 3.7): a second backward accumulates into that storage twice, giving 3 and 3. tfjs's gradients are
# separate tensors (and the adapter's grad slots separate cells), so two backwards give 2 and 2. A LibTorch quirk
# that lockstep documents, not a tfjs bug. Pinned by the named case sem3-zero-dim-grads-share-storage.
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
  const p0 = tf.scalar(0), p1 = tf.scalar(0);
  const f = (a, b) => tf.add(tf.sum(a), tf.sum(b));
  let g0 = tf.scalar(0), g1 = tf.scalar(0);
  for (let i = 0; i < 2; i++) {
    const [d0, d1] = tf.grads(f)([p0, p1]);
    g0 = tf.add(g0, d0); g1 = tf.add(g1, d1);
  }
  out({grads: [vals(g0)[0], vals(g1)[0]]});
})();
JS
)" || { echo "node failed"; exit 2; }
/usr/bin/python3 - "$tfjs" <<'PY'
import json, math, sys, torch
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
p0 = torch.tensor(0.0, requires_grad=True); p1 = torch.tensor(0.0, requires_grad=True)
y = p0.sum() + p1.sum()
y.backward(retain_graph=True)
shared = p0.grad.data_ptr() == p1.grad.data_ptr()
y.backward()
print("y = p0.sum() + p1.sum() (0-d), backward twice: grads (torch: one storage after the first backward: %s)" % shared)
print("  %-16s %s" % (tv + ":", num(t["grads"])))
print("  %-16s %s" % (pv + ":", [p0.grad.item(), p1.grad.item()]))
report(not same(t["grads"], [p0.grad.item(), p1.grad.item()]))
PY
