#!/usr/bin/env node
// A complete lockstep driver on the JavaScript driver kit: a tiny autograd written right here (float64 tensors, seven
// ops, reverse mode with PyTorch's .grad rules, plain SGD) and its mapping onto kit.Framework. Everything else (the
// protocol, the hello, the records, error kinds, what to answer `unsupported`) is the kit's.
//
//   lockstep replay --engine 'node tools/driverkit/js/examples/tiny_autograd_driver.js'
//
// TINY_AUTOGRAD_BUG=accumulate plants a real bug (a second backward overwrites a grad's values instead of adding to
// them, SEM-3.2): tools/driverkit/js/check_kit.sh shows that the replay then fails.
'use strict';

const kit = require('..');

// ---- the framework: a ~50-line autograd ------------------------------------------------------------------------
let gradEnabled = true;
class T {
  constructor(data, shape, requiresGrad = false, node = null) {
    this.data = Float64Array.from(data);
    this.shape = shape;
    this.requiresGrad = requiresGrad;
    this.node = node;  // {inputs, backward: g -> a grad per input, saves: whether it keeps tensors, freed}
    this.grad = null;
  }
}
function result(inputs, data, shape, backward, saves) {
  const rg = gradEnabled && inputs.some((t) => t.requiresGrad);
  return new T(data, shape, rg, rg ? { inputs, backward, saves, freed: false } : null);
}
const at = (t, i) => (t.data.length === 1 ? t.data[0] : t.data[i]);  // a 0-d operand broadcasts
const wide = (a, b) => (a.data.length >= b.data.length ? a : b);
const zip = (a, b, f) => Array.from(wide(a, b).data, (_, i) => f(at(a, i), at(b, i)));
const fit = (t, g) => (t.data.length === g.length ? g : [g.reduce((s, x) => s + x, 0)]);  // undo a broadcast
const sum = (xs) => xs.reduce((s, x) => s + x, 0);
const ops = {
  add: (a, b) => result([a, b], zip(a, b, (x, y) => x + y), wide(a, b).shape, (g) => [fit(a, g), fit(b, g)], false),
  sub: (a, b) => result([a, b], zip(a, b, (x, y) => x - y), wide(a, b).shape, (g) => [fit(a, g), fit(b, g.map((x) => -x))], false),
  mul: (a, b) => result([a, b], zip(a, b, (x, y) => x * y), wide(a, b).shape,
    (g) => [fit(a, g.map((x, i) => x * at(b, i))), fit(b, g.map((x, i) => x * at(a, i)))], true),
  neg: (a) => result([a], a.data.map((x) => -x), a.shape, (g) => [g.map((x) => -x)], false),
  mul_scalar: (a, s) => result([a], a.data.map((x) => x * s), a.shape, (g) => [g.map((x) => x * s)], false),
  sum: (a) => result([a], [sum(a.data)], [], (g) => [a.data.map(() => g[0])], false),
  mean: (a) => result([a], [sum(a.data) / a.data.length], [], (g) => [a.data.map(() => g[0] / a.data.length)], false),
};
const BUG = process.env.TINY_AUTOGRAD_BUG === 'accumulate';  // planted: overwrite where it should add
function accumulate(leaf, g) {
  if (leaf.grad === null) leaf.grad = new T(g, leaf.shape);  // SEM-3.1: a new tensor
  else leaf.grad.data.set(leaf.grad.data.map((x, i) => (BUG ? 0 : x) + g[i]));  // SEM-3.2: added in place
}
function backward(out, seed, retain) {
  if (!out.requiresGrad) throw new Error('element 0 of tensors does not require grad and does not have a grad_fn');
  if (!seed && out.data.length !== 1) throw new Error('grad can be implicitly created only for scalar outputs');
  const order = [], seen = new Set();
  const visit = (t) => { if (seen.has(t)) return; seen.add(t); if (t.node) t.node.inputs.forEach(visit); order.push(t); };
  visit(out);
  if (order.some((t) => t.node && t.node.freed && t.node.saves)) throw new Error('Trying to backward through the graph a second time');
  const grads = new Map([[out, seed || [1]]]);
  for (const t of order.reverse()) {  // outputs before their inputs; a leaf's grad summed over every path first
    const g = grads.get(t);
    if (g === undefined) continue;  // nothing flows into it: a constant, or add(const, const) beside the graph
    if (!t.node) { accumulate(t, g); continue; }
    t.node.backward(Float64Array.from(g)).forEach((gi, i) => {
      const x = t.node.inputs[i];
      if (x.requiresGrad) grads.set(x, grads.has(x) ? grads.get(x).map((v, j) => v + gi[j]) : gi);
    });
    if (!retain) t.node.freed = true;
  }
}

// ---- its mapping onto the kit ----------------------------------------------------------------------------------
class TinyAutograd extends kit.Framework {
  constructor() {
    super();
    this.name = 'tiny-autograd';
    this.version = '0.1';
    this.defaults = { zero_grad: 'zero' };  // zero_grad() zeroes in place, as LibTorch 1.13
    this.dtypes = ['float64'];
    this.optimizers = { sgd: ['lr'] };
    this.lacks = ['create_graph'];
    for (const op of Object.keys(ops)) this['op_' + op] = ops[op];  // the kit finds op_NAME methods
  }
  // --declare-all: a hello without "supports", so lockstep sends every program and the kit answers `unsupported`
  // (with the feature it lacks) for those outside what this class implements.
  supports() { return process.argv.includes('--declare-all') ? null : this.capabilities(); }
  parameter(values, dtype, shape) { return new T(values, shape, true); }
  constant(values, dtype, shape) { return new T(values, shape); }
  toList(t) { return t.data; }
  dtype() { return 'float64'; }
  shape(t) { return t.shape; }
  requiresGrad(t) { return t.requiresGrad; }
  hasGradFn(t) { return t.node !== null; }
  noGrad(fn) { gradEnabled = false; try { return fn(); } finally { gradEnabled = true; } }
  backward(out, gradient, retainGraph) { backward(out, gradient, retainGraph); }
  grad(p) { return p.grad; }
  setGradNone(p) { p.grad = null; }
  makeOptimizer(kind, groups, defaults) {
    const all = groups.map((g) => ({ params: g.params, lr: kit.resolveGroup(kind, g, defaults).lr }));
    if (all.some((g) => !(g.lr >= 0))) throw new Error('Invalid learning rate');
    return { param_groups: all, defaults };  // torch-style groups: the kit reads and updates their options there
  }
  addParamGroup(o, g) { o.param_groups.push({ params: g.params, lr: kit.resolveGroup('sgd', g, o.defaults).lr }); }
  zeroGrad(o, setToNone) {
    for (const g of o.param_groups) for (const p of g.params) {
      if (setToNone) p.grad = null; else if (p.grad) p.grad.data.fill(0);
    }
  }
  step(o) {  // SEM-5.3, in place; a parameter without a grad is skipped (SEM-4.3)
    for (const g of o.param_groups) for (const p of g.params) if (p.grad) p.data.set(p.data.map((x, i) => x - g.lr * p.grad.data[i]));
  }
  classify(message) {
    if (message.includes('does not require grad')) return 'no_grad_fn';
    if (message.includes('implicitly created only for scalar')) return 'nonscalar_backward';
    if (message.includes('graph a second time')) return 'backward_through_freed_graph';
    if (message.includes('Invalid learning rate')) return 'invalid_option';
    return 'other';
  }
}

module.exports = { TinyAutograd, T };
if (require.main === module) kit.serve(new TinyAutograd());
