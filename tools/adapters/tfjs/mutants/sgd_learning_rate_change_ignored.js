// A planted bug in TensorFlow.js itself (node -r this file driver.js): SGD's setLearningRate after construction does
// nothing, so a changed learning rate never applies. The momentum entry's masks (setMomentum is ignored) must not
// hide it. (The constructor's own call, which creates the scalar `c`, still runs.)
const tf = require('@tensorflow/tfjs');
const setLearningRate = tf.SGDOptimizer.prototype.setLearningRate;
tf.SGDOptimizer.prototype.setLearningRate = function (lr) {
  if (this.c == null) setLearningRate.call(this, lr);
};
