// A planted bug in TensorFlow.js itself (node -r this file driver.js): the gradient registered for the Abs kernel
// is 2 * sign(x) * dy, twice the true one wherever x != 0. Guards the "op:abs" entry of fixtures/expectations/
// tfjs.json (grads and held grads of programs with abs, for tfjs's step(x, -1) at 0 and NaN): it must not hide an
// abs gradient that is wrong at ordinary finite inputs.
const tf = require('@tensorflow/tfjs');
tf.registerGradient({  // replaces the built-in absGradConfig (the registry is keyed by kernel name)
  kernelName: 'Abs',
  inputsToSave: ['x'],
  gradFunc: (dy, saved) => {
    const [x] = saved;
    return { x: () => tf.mul(dy, tf.mul(tf.sign(tf.cast(x, 'float32')), tf.scalar(2, 'float32'))) };
  },
});
