// A planted bug in js-pytorch itself (node -r this file driver.js): every backward starts from 1.5 times its seed.
// The mask for its second-backward bug (from the repeated backward on) must not hide the first backward's grads.
const { torch } = require('js-pytorch');
const backward = torch.Tensor.prototype.backward;
torch.Tensor.prototype.backward = function (grad = null, child = null) {
  if (child === null) grad = (grad || torch.ones(this.shape)).mul(1.5);
  return backward.call(this, grad, child);
};
