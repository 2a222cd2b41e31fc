// A planted bug in TensorFlow.js itself (node -r this file driver.js): the gradient registered for the RealDiv
// kernel (tf.div of floats) gives the divisor b of a / b the wrong sign, +(dy * a) / b^2, at finite inputs too; the
// dividend's is unchanged. Guards the "op:div" entry of fixtures/expectations/tfjs.json (actual +-inf, for b^2
// underflowing to 0): it must not hide a wrong divisor gradient.
const tf = require('@tensorflow/tfjs');
const builtin = tf.getGradient('RealDiv');
tf.registerGradient(Object.assign({}, builtin, {
  gradFunc: (dy, saved, attrs) => {
    const grads = builtin.gradFunc(dy, saved, attrs);
    return { a: grads.a, b: () => tf.neg(grads.b()) };
  },
}));
