#!/usr/bin/env node
// js-pytorch (npm js-pytorch, "a JavaScript library like PyTorch, built from scratch") as a lockstep driver
// (fixtures/PROTOCOL.md), written on the driver kit (tools/driverkit/js: the protocol loop, the hello, numbers, the
// program interpreter, records and error kinds). This file is the mapping: js-pytorch's own Tensor autograd, .grad
// accumulation, Tensor.zero_grad / Adam.zero_grad and optim.Adam.
//
//   build/lockstep replay --engine 'node tools/adapters/jspytorch/driver.js' \
//       --expectations fixtures/expectations/js-pytorch.json
//   build/lockstep run --engine 'node tools/adapters/jspytorch/driver.js' --count 300 --seed 1 \
//       --expectations fixtures/expectations/js-pytorch.json
//
// What is the library's own (nothing of it is corrected or hidden; tools/adapters/jspytorch/README.md):
//  - parameters are `new torch.Tensor(data, true)`; their grad is the library's `_grad` tensor, observed as it
//    is (js-pytorch gives every requires_grad tensor a zero grad at creation, and every backward and
//    zero_grad replaces the grad tensor by a new one: both show in the trace);
//  - forward: the library's ops (add sub mul div neg pow exp log matmul sum mean at transpose reshape,
//    nn.ReLU, nn.MSELoss, nn.CrossEntropyLoss; square is pow(2), linear is nn.Linear.forward's
//    x.matmul(W).add(b) with the program's (out, in) weight transposed, embedding is nn.Embedding's E.at(rows),
//    a 2-D sum or mean reshapes to 1-D first); backward: Tensor.backward(gradient) of the held output (the
//    library has no retain_graph: its graph is never freed);
//  - float64 only: JS numbers are doubles and js-pytorch has no float32 (the hello declares float64);
//  - Adam: torch.optim.Adam(params, lr, reg, betas, eps), its own step() and zero_grad(); its state is the
//    `m` and `v` tensors it keeps on each parameter (reported as exp_avg, exp_avg_sq) and it keeps no step
//    count (so the trace has no `step`). AdamW is the same class with `reg` = weight_decay: probing shows that
//    `reg` is decoupled weight decay (p -= lr * reg * p beside the update), AdamW's form, not Adam's L2 term.
//  - options a program leaves out are left to the library's defaults (Adam: betas [0.9, 0.99], eps 1e-9).
// What the adapter emulates because the library has no counterpart (declared in the hello as "emulated"):
//  - SGD (the library has none): plain SGD with lr only, p._data = p.add(p._grad.mul(-lr))._data, the way
//    the library's own Adam.step writes a parameter; zero_grad of an SGD program calls each parameter's own
//    Tensor.zero_grad(), which is what Adam.zero_grad does;
//  - 0-d tensors: the library represents a scalar as a 1-element tensor of shape [1]; the adapter reports
//    the program's shape [] for such values (values are never changed);
//  - the bookkeeping of the protocol (the kit's): the held output, grad handles, error kinds, a no_optimizer /
//    no_output / no_such_group error where the library has no such call at all.
'use strict';

const kit = require('../../driverkit/js');  // first: it keeps stdout for answers (console.* to stderr)
const fs = require('fs');
const path = require('path');
const { torch } = require('js-pytorch');
const { Tensor } = torch;

const LIB_VERSION = (() => {
  const entry = require.resolve('js-pytorch');  // .../node_modules/js-pytorch/dist/index.cjs
  return JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')).version;
})();

// Row-major values to the nested arrays the library takes; a 0-d value is the library's scalar, [v].
function nest(v, shape) {
  if (shape.length === 0) return [v[0]];
  if (shape.length === 1) return v;
  const rows = [];
  for (let i = 0; i < shape[0]; i++) rows.push(v.slice(i * shape[1], (i + 1) * shape[1]));
  return rows;
}
const flat = (data) => (Array.isArray(data) ? data.flat(Infinity) : [data]);
const libShape = (t) => (Array.isArray(t.shape) ? t.shape.slice() : []);

// js-pytorch's add/sub/mul/div throw on a one-element operand against a larger one ('Given arguments cannot be
// added.'): a missing feature, answered unsupported rather than recorded as an error lockstep would compare.
function sameCount(a, b) {
  if (flat(a._data).length !== flat(b._data).length)
    throw new kit.Unsupported('broadcast (js-pytorch cannot broadcast a one-element tensor)');
}
// sum and mean of a 2-D tensor: reshaped to 1-D first with the library's reshape.
const flattened = (x) => (libShape(x).length === 2 ? x.reshape([flat(x._data).length]) : x);

class JsPytorch extends kit.Framework {
  constructor() {
    super();
    this.name = 'js-pytorch';
    this.version = LIB_VERSION;
    this.defaults = { zero_grad: 'zero' };
    this.emulated = ['sgd: plain SGD (lr only) written by the adapter, the library has no SGD',
      '0-d shapes: the library holds a scalar as shape [1]; reported as []'];
    this.observes = [];  // no optional trace fields announced (as before the kit)
    this.dtypes = ['float64'];
    this.optimizers = { sgd: ['lr'], adam: ['lr', 'betas', 'eps'], adamw: ['lr', 'betas', 'eps', 'weight_decay'] };
    // create_graph: no higher-order gradients; set_to_none: a grad cannot be None; param_groups: one parameter
    // list; invalid_options: the library validates nothing.
    this.lacks = ['create_graph', 'set_to_none', 'param_groups', 'invalid_options'];
  }

  // ---- tensors ----
  parameter(values, dtype, shape) { return new Tensor(nest(values, shape), true); }
  constant(values, dtype, shape) { return new Tensor(nest(values, shape), false); }
  toList(t) { return flat(t._data); }
  dtype() { return 'float64'; }
  // The program's shape when the library's tensor holds that many values (a scalar is [1] there), else its own.
  shape(t, programShape) { return flat(t._data).length === kit.numel(programShape) ? programShape : libShape(t); }
  requiresGrad(t) { return !!t.requires_grad; }
  hasGradFn(t) { return !!t.requires_grad && t.operation != null; }

  // ---- ops: the library's ----
  op_add(a, b) { sameCount(a, b); return a.add(b); }
  op_sub(a, b) { sameCount(a, b); return a.sub(b); }
  op_mul(a, b) { sameCount(a, b); return a.mul(b); }
  op_div(a, b) { sameCount(a, b); return a.div(b); }
  op_neg(a) { return a.neg(); }
  op_mul_scalar(a, s) { return a.mul(s); }
  op_square(a) { return a.pow(2); }
  op_pow(a, e) { return a.pow(e); }
  op_exp(a) { return a.exp(); }
  op_log(a) { return a.log(); }
  op_relu(a) { return new torch.nn.ReLU().forward(a); }
  op_matmul(a, b) { return a.matmul(b); }
  op_sum(a) { return flattened(a).sum(); }
  op_mean(a) { return flattened(a).mean(); }
  op_mse_loss(a, b) { return new torch.nn.MSELoss().forward(a, b); }
  op_cross_entropy(a, targets) { return new torch.nn.CrossEntropyLoss().forward(a, new Tensor(targets)); }
  // nn.Linear.forward's ops (x.matmul(W).add(b)) with the program's (out, in) weight transposed.
  op_linear(x, w, b) {
    const t = x.matmul(w.transpose(0, 1));
    return b === undefined ? t : t.add(b);
  }
  op_embedding(w, indices) { return w.at(indices); }  // nn.Embedding.forward's op: E.at(indices)

  // ---- autograd ----
  // retain_graph is not an argument of js-pytorch's backward: its graph is never freed.
  backward(out, gradient) {
    if (gradient === null) return out.backward();
    // The gradient in the library's shape of the output (a scalar is [1] there).
    return out.backward(new Tensor(torch._reshape(gradient, libShape(out)), false));
  }
  grad(p) { return p._grad instanceof Tensor ? p._grad : null; }

  classify(message) { return message.includes('requires_grad set to False') ? 'no_grad_fn' : 'other'; }

  // ---- optimizers: one parameter list, the library's ----
  makeOptimizer(kind, groups, d) {
    const list = groups.length ? groups[0].params : [];  // `groups: []` is an empty list reported as no group
    if (kind === 'sgd') return { sgd: { params: list, lr: d.lr } };
    // js-pytorch's Adam(params, lr = 1e-3, reg = 0, betas = [0.9, 0.99], eps = 1e-9); undefined takes its default.
    const reg = kind === 'adamw' && d.weight_decay === undefined ? 1e-2 : d.weight_decay;  // AdamW's default
    return { adam: new torch.optim.Adam(list, d.lr, reg, d.betas, d.eps) };
  }

  zeroGrad(o) {
    if (o.adam) o.adam.zero_grad();                 // the library's Adam.zero_grad
    else for (const p of o.sgd.params) p.zero_grad();  // what Adam.zero_grad does, per parameter
  }

  step(o) {
    if (o.adam) return o.adam.step();
    for (const p of o.sgd.params) p._data = p.add(p._grad.mul(-o.sgd.lr))._data;  // emulated plain SGD
    return undefined;
  }

  // The optimizer's own fields, which its next step reads.
  setOptions(o, i, c) {
    if (o.sgd) { if (c.lr !== undefined) o.sgd.lr = c.lr; return; }
    if (c.lr !== undefined) o.adam.lr = c.lr;
    if (c.betas !== undefined) { o.adam.b1 = c.betas[0]; o.adam.b2 = c.betas[1]; }
    if (c.eps !== undefined) o.adam.eps = c.eps;
    if (c.weight_decay !== undefined) o.adam.reg = c.weight_decay;
  }

  paramGroups(o) {
    if (o.sgd) return [{ lr: o.sgd.lr }];
    const a = o.adam;
    return [{ lr: a.lr, betas: [a.b1, a.b2], eps: a.eps, weight_decay: a.reg }];
  }

  // js-pytorch keeps Adam's moments on the tensor (m, v), created by the constructor; no step count.
  state(o, p) {
    return o.adam && p.m instanceof Tensor && p.v instanceof Tensor ? { exp_avg: p.m, exp_avg_sq: p.v } : null;
  }
}

kit.serve(new JsPytorch());
