// Unit tests of the JavaScript driver kit: the number encoding both ways (PROTOCOL §5: -0.0, NaN, the infinities)
// and the records it builds for one program (PROTOCOL §4), on the tiny autograd of examples/. Plain node:
//   node tools/driverkit/js/test/kit.test.js      (exit status 0 when every test passes)
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const kit = require('..');
const { TinyAutograd } = require('../examples/tiny_autograd_driver.js');

test('numbers out: NaN and the infinities are strings, -0.0 keeps its sign, the rest round-trips', () => {
  assert.equal(kit.numberText(NaN), '"NaN"');
  assert.equal(kit.numberText(Infinity), '"Infinity"');
  assert.equal(kit.numberText(-Infinity), '"-Infinity"');
  assert.equal(kit.numberText(-0), '-0.0');  // JSON.stringify(-0) would write 0
  assert.equal(kit.numberText(0), '0');
  assert.equal(kit.numberText(0.1), '0.1');
  assert.equal(kit.numberText(Math.fround(0.1)), '0.10000000149011612');
  assert.equal(kit.toJson({ a: [-0, NaN, Infinity, -Infinity, 1.5], b: undefined, c: new Float64Array([-0, 2]), d: 'x', e: true }),
    '{"a":[-0.0,"NaN","Infinity","-Infinity",1.5],"c":[-0.0,2],"d":"x","e":true}');
});

test('numbers in: the strings, -0.0 read back with its sign, anything else refused', () => {
  assert.ok(Number.isNaN(kit.numberIn('NaN')));
  assert.equal(kit.numberIn('Infinity'), Infinity);
  assert.equal(kit.numberIn('-Infinity'), -Infinity);
  assert.ok(Object.is(kit.numberIn(JSON.parse('-0.0')), -0));
  assert.throws(() => kit.numberIn('nan'));
  const values = [-0, NaN, Infinity, -Infinity, 5e-324, 1.7976931348623157e308];
  const back = JSON.parse(kit.toJson(values)).map(kit.numberIn);
  back.forEach((x, i) => assert.ok(Object.is(x, values[i]), `${x} vs ${values[i]}`));
});

test('optimizer options: defaults resolved by kind, a group with options takes the option type defaults', () => {
  assert.deepEqual(kit.optionsIn({ lr: 0.5, betas: [0.8, 'Infinity'], amsgrad: 1, comment: 'x' }), { lr: 0.5, betas: [0.8, Infinity], amsgrad: true });
  assert.deepEqual(kit.resolveGroup('adamw', { params: [], lr: 0.5 }, { lr: 0.1, weight_decay: 0 }),
    { lr: 0.5, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 1e-2, amsgrad: false, maximize: false });
  assert.deepEqual(kit.resolveGroup('sgd', { params: [] }, { lr: 0.1, momentum: 0.9 }),
    { lr: 0.1, momentum: 0.9, dampening: 0, weight_decay: 0, nesterov: false, maximize: false });
  // "options": {} is options of its own, none set: the option type's defaults (LibTorch 1.13: Adam lr 0.001).
  const given = Object.defineProperty({ params: [] }, 'hasOptions', { value: true, enumerable: false });
  assert.equal(kit.resolveGroup('adam', given, { lr: 0.5 }).lr, 1e-3);
  assert.equal(kit.resolveGroup('adam', { params: [] }, { lr: 0.5 }).lr, 0.5);
});

const W = (values) => ({ name: 'w', dtype: 'float64', shape: [2], values });
const program = {
  params: [W([1, -0])],
  loss: { op: 'sum', args: [{ op: 'mul', args: [{ op: 'param', name: 'w' }, { op: 'param', name: 'w' }] }] },
  optimizer: { type: 'sgd', defaults: { lr: 0.5 }, params: ['w'] },
  actions: [{ action: 'forward' }, { action: 'backward', retain_graph: true }, { action: 'hold_grad', param: 'w', handle: 'g' },
    { action: 'backward' }, { action: 'zero_grad', set_to_none: false }, { action: 'step' },
    { action: 'set_grad_none', param: 'w' }, { action: 'backward' }, { action: 'set_options', group: 3, options: { lr: 1 } }],
};

test('records: init and one per action, with grads, identity, handles, groups, output and error kinds', async () => {
  const answer = await kit.runProgram(new TinyAutograd(), program);
  const t = answer.trace;
  assert.equal(t.engine, 'tiny-autograd-0.1');
  assert.deepEqual(t.init, { action: 'init',
    params: { w: { dtype: 'float64', shape: [2], values: [1, -0], same_as_previous: true, grad: { defined: false }, state: {} } },
    handles: {},
    groups: [{ params: ['w'], options: { lr: 0.5, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false } }] });
  assert.deepEqual(t.records.map((r) => r.action), program.actions.map((a) => a.action));
  const [forward, first, hold, second, zero, step, none, freed, noGroup] = t.records;
  assert.deepEqual(forward.output, { dtype: 'float64', shape: [], values: [1], requires_grad: true, has_grad_fn: true });
  assert.deepEqual(first.params.w.grad, { defined: true, values: [2, -0], requires_grad: false, has_grad_fn: false,
    same_as_previous: false });  // SEM-3.1: a new tensor; d(w*w)/dw at -0.0 is -0.0
  assert.deepEqual(hold.handles, { g: { defined: true, dtype: 'float64', shape: [2], values: [2, -0] } });
  assert.equal(second.params.w.grad.same_as_previous, true);  // SEM-3.2: accumulated in place
  assert.deepEqual(second.params.w.grad.values, [4, -0]);
  assert.deepEqual(second.handles.g.values, [4, -0]);  // the handle aliases the grad
  assert.deepEqual(zero.params.w.grad.values, [0, 0]);
  assert.equal(zero.params.w.grad.same_as_previous, true);  // SEM-4.1: zeroed in place
  assert.deepEqual(step.params.w.values, [1, -0]);
  assert.equal(step.params.w.same_as_previous, true);
  assert.deepEqual(none.params.w.grad, { defined: false });
  assert.deepEqual(none.handles.g.values, [0, 0]);  // the handle keeps the old tensor
  assert.equal(freed.error.kind, 'backward_through_freed_graph');  // the second backward did not retain the graph
  assert.deepEqual(freed.params.w.grad, { defined: false });
  assert.equal(noGroup.error.kind, 'no_such_group');
  assert.match(kit.toJson(answer), /"values":\[1,-0\.0\]/);
});

test('decisions of PROTOCOL §4: no_output, no_optimizer, a failed setup leaves no optimizer, a failed forward keeps the output', async () => {
  const fw = new TinyAutograd();
  const bare = await kit.runProgram(fw, { params: [W([1, 2])], actions: [{ action: 'backward' }, { action: 'step' }] });
  assert.deepEqual(bare.trace.records.map((r) => r.error.kind), ['no_output', 'no_optimizer']);
  assert.deepEqual(bare.trace.init.groups, []);
  const bad = await kit.runProgram(fw, { params: [W([1, 2])],
    optimizer: { type: 'sgd', defaults: { lr: 0.1, eps: 1e-8 }, params: ['w'] }, actions: [{ action: 'zero_grad', set_to_none: false }] });
  assert.equal(bad.trace.init.error.kind, 'invalid_option');  // eps is foreign to SGD
  assert.deepEqual(bad.trace.init.groups, []);
  assert.equal(bad.trace.records[0].error.kind, 'no_optimizer');
  const loss = { op: 'sum', args: [{ op: 'param', name: 'w' }] };
  const kept = await kit.runProgram(fw, { params: [W([1, 2])], actions: [{ action: 'forward', loss },
    { action: 'forward', loss: { op: 'mean', args: [{ op: 'param', name: 'nope' }] } }] });
  assert.ok(kept.trace.records[1].error);
  assert.deepEqual(kept.trace.records[1].output.values, [3]);
});

test('groups: add_param_group and set_options, resolved and reported per group', async () => {
  const fw = new TinyAutograd();
  const params = [W([1, 2]), { name: 'v', dtype: 'float64', shape: [], values: [3] }, { name: 'u', dtype: 'float64', shape: [], values: [4] }];
  const answer = await kit.runProgram(fw, { params, optimizer: { type: 'sgd', defaults: { lr: 0.5 }, params: ['w'] },
    actions: [{ action: 'add_param_group', params: ['v'] }, { action: 'add_param_group', params: ['u'], options: { lr: 2 } },
      { action: 'set_options', group: 1, options: { lr: 0.25 } }, { action: 'add_param_group', params: ['u'], options: { momentum: 0 } }] });
  const groups = answer.trace.records[2].groups;
  assert.deepEqual(groups.map((g) => [g.params, g.options.lr]), [[['w'], 0.5], [['v'], 0.25], [['u'], 2]]);
  assert.equal(answer.trace.records[3].error.kind, 'invalid_option');  // SGD options without lr
});

test('unsupported: what the framework lacks is named, from the grammar alone', async () => {
  const fw = new TinyAutograd();
  const ask = (p) => kit.runProgram(fw, Object.assign({ params: [W([1, 2])], actions: [] }, p));
  assert.deepEqual(await ask({ params: [{ name: 'w', dtype: 'float32', shape: [1], values: [1] }] }), { unsupported: 'float32' });
  assert.deepEqual(await ask({ loss: { op: 'exp', args: [{ op: 'param', name: 'w' }] } }), { unsupported: 'op:exp' });
  assert.deepEqual(await ask({ optimizer: { type: 'adam', params: ['w'] } }), { unsupported: 'adam' });
  assert.deepEqual(await ask({ optimizer: { type: 'sgd', defaults: { lr: 1, momentum: 0.9 }, params: ['w'] } }), { unsupported: 'sgd.momentum' });
  assert.deepEqual(await ask({ actions: [{ action: 'backward', create_graph: true }] }), { unsupported: 'create_graph' });
  // an option not honoured but at its default value is fine
  assert.ok((await ask({ optimizer: { type: 'sgd', defaults: { lr: 1, momentum: 0 }, params: ['w'] } })).trace);
});

test('hello: protocol min(requested, 3), supports computed from the class', () => {
  const fw = new TinyAutograd();
  assert.equal(kit.hello(fw, 1).protocol, 1);
  assert.equal(kit.hello(fw, 2).protocol, 2);
  assert.equal(kit.hello(fw, 3).protocol, 3);
  assert.equal(kit.hello(fw, 7).protocol, 3);
  const h = kit.hello(fw, 2);
  assert.deepEqual(h.supports.ops, ['add', 'sub', 'mul', 'neg', 'mul_scalar', 'sum', 'mean']);
  assert.deepEqual(h.supports.optimizers, { sgd: ['lr'] });
  assert.ok(!h.supports.features.includes('create_graph'));
  assert.deepEqual(h.observes, ['param.same_as_previous']);
});

// The tiny SGD with maximize (SEMANTICS §20.1): the step negates the gradient first; .grad keeps its values.
class Maximizing extends TinyAutograd {
  constructor() {
    super();
    this.optimizers = { sgd: ['lr', 'maximize'] };
  }
  makeOptimizer(kind, groups, defaults) {
    const o = super.makeOptimizer(kind, groups, defaults);
    o.param_groups.forEach((g, i) => { g.maximize = kit.resolveGroup(kind, groups[i], defaults).maximize; });
    return o;
  }
  step(o) {
    for (const g of o.param_groups) for (const p of g.params) {
      if (p.grad) p.data.set(p.data.map((x, i) => x - g.lr * (g.maximize ? -1 : 1) * p.grad.data[i]));
    }
  }
}

test('maximize: an option of the five kinds, a flag read as a boolean, traced only when true', async () => {
  for (const kind of ['sgd', 'adam', 'adamw', 'rmsprop', 'adagrad']) {
    assert.ok(kit.FIELDS[kind].includes('maximize'));
    assert.equal(kit.OPTION_DEFAULTS[kind].maximize, false);
  }
  assert.deepEqual(kit.optionsIn({ maximize: true, lr: 1 }), { maximize: true, lr: 1 });
  assert.deepEqual(kit.optionsIn({ maximize: false }), { maximize: false });
  const sgd = { lr: 0.1, momentum: 0, dampening: 0, weight_decay: 0, nesterov: false };
  const w = { op: 'param', name: 'w' };
  const prog = (defaults, actions = []) => ({ params: [W([1, 2])],
    loss: { op: 'sum', args: [{ op: 'mul', args: [w, w] }] },
    optimizer: { type: 'sgd', defaults, params: ['w'] },
    actions: [{ action: 'forward' }, { action: 'backward' }, { action: 'step' }].concat(actions) });
  // w = [1, 2], grad [2, 4], lr 0.1: up the gradient to [1.2, 2.4], maximize traced as true.
  const up = (await kit.runProgram(new Maximizing(), prog({ lr: 0.1, maximize: true },
    [{ action: 'set_options', options: { maximize: false } }]))).trace;
  const step = up.records[2];
  assert.deepEqual(step.params.w.values, [1.2, 2.4]);
  assert.deepEqual(step.params.w.grad.values, [2, 4]);
  assert.deepEqual(up.init.groups, [{ params: ['w'], options: Object.assign({}, sgd, { maximize: true }) }]);
  assert.match(kit.toJson(step.groups), /"nesterov":false,"maximize":true\}/);
  assert.deepEqual(up.records[3].groups, [{ params: ['w'], options: sgd }]);  // set to false: the key is gone
  // false, or not given: no key, the same trace.
  const down = (await kit.runProgram(new Maximizing(), prog({ lr: 0.1, maximize: false }))).trace;
  const unset = (await kit.runProgram(new Maximizing(), prog({ lr: 0.1 }))).trace;
  assert.deepEqual(down.records[2].params.w.values, [0.8, 1.6]);
  assert.equal(kit.toJson(down), kit.toJson(unset));
  for (const r of [down.init].concat(down.records)) assert.deepEqual(r.groups, [{ params: ['w'], options: sgd }]);
  // A framework that does not declare it runs false and refuses true, by name (not as a foreign option).
  const tiny = new TinyAutograd();
  assert.ok((await kit.runProgram(tiny, prog({ lr: 0.1, maximize: false }))).trace);
  assert.deepEqual(await kit.runProgram(tiny, prog({ lr: 0.1, maximize: true })), { unsupported: 'sgd.maximize' });
  assert.deepEqual(await kit.runProgram(tiny, prog({ lr: 0.1 }, [{ action: 'set_options', options: { maximize: true } }])),
    { unsupported: 'sgd.maximize' });
});

test('maximize: a hello lists it where the class declares it or its options are computed', () => {
  assert.deepEqual(kit.hello(new Maximizing(), 3).supports.optimizers, { sgd: ['lr', 'maximize'] });
  assert.deepEqual(kit.hello(new TinyAutograd(), 3).supports.optimizers, { sgd: ['lr'] });
  class Every extends kit.Framework {
    constructor() { super(); this.name = 'every'; }
    makeOptimizer() { return null; }
  }
  const optimizers = kit.hello(new Every(), 3).supports.optimizers;
  for (const kind of ['sgd', 'adam', 'adamw', 'rmsprop', 'adagrad']) assert.ok(optimizers[kind].includes('maximize'), kind);
});
