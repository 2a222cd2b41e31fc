#!/bin/bash
# tfjs 4.22's tf.losses.softmaxCrossEntropy forms the loss as -sum(one_hot * log_softmax(logits)): a -inf logit of a
# class other than the target gives -inf * 0 = NaN, where torch's cross_entropy (the target's -log_softmax) is
# finite (log 2 for [0, 0, -inf]). Pinned by the named case sem2-cross-entropy-minus-infinity-logit.
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
  const logits = tf.tensor2d([[0, 0, -Infinity]]), labels = tf.tensor2d([[1, 0, 0]]);
  const f = l => tf.losses.softmaxCrossEntropy(labels, l);
  out({loss: vals(f(logits)), grad: vals(tf.grads(f)([logits])[0])});
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
logits = torch.tensor([[0.0, 0.0, -math.inf]], requires_grad=True)
loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0]))
loss.backward()
print("cross_entropy(logits [[0, 0, -inf]], target class 0) and its grad")
print("  %-16s loss %s grad %s" % (tv + ":", num(t["loss"]), num(t["grad"])))
print("  %-16s loss %s grad %s" % (pv + ":", [loss.item()], logits.grad.flatten().tolist()))
report(math.isnan(num(t["loss"])[0]) and math.isfinite(loss.item()))
PY
