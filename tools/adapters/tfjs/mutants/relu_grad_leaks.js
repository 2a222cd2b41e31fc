// A planted bug in TensorFlow.js itself (node -r this file driver.js): the gradient registered for the Relu kernel
// passes 0.5 * dy where x <= 0 (dy where x > 0), a leak at finite inputs. Guards the "op:relu" + "special_values"
// entry of fixtures/expectations/tfjs.json (for tfjs's dy * step(x): NaN at a NaN input or an infinite dy): it
// must not hide a relu gradient that is wrong at ordinary finite inputs.
const tf = require('@tensorflow/tfjs');
const builtin = tf.getGradient('Relu');
tf.registerGradient(Object.assign({}, builtin, {
  gradFunc: (dy, saved) => {
    const [x] = saved;
    // 0.5 + 0.5 * step(x): 1 for x > 0, 0.5 for x <= 0 (NaN at NaN, as step's).
    const slope = tf.add(tf.mul(tf.cast(tf.step(x), 'float32'), tf.scalar(0.5, 'float32')), tf.scalar(0.5, 'float32'));
    return { x: () => tf.mul(dy, slope) };
  },
}));
