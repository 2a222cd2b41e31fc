// A planted bug in TensorFlow.js itself (node -r this file driver.js): Adam's applyGradients steps along the
// negated gradients. lockstep must fail the adapter's run with the shipped expectations and tolerance: the float32
// bias-correction tolerance and the step-count masks must not hide a wrong Adam update (check_adapter_mutants.sh).
const tf = require('@tensorflow/tfjs');
const adam = tf.train.adam;
tf.train.adam = (...args) => {
  const opt = adam(...args);
  const apply = opt.applyGradients.bind(opt);
  opt.applyGradients = (list) =>
    apply(list.map((g) => (g.tensor ? { name: g.name, tensor: tf.neg(g.tensor) } : g)));
  return opt;
};
