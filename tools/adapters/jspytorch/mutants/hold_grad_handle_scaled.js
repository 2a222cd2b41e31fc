// A planted bug in js-pytorch itself (node -r this file driver.js): Tensor.backward doubles the values of the grad
// tensor it replaces, so a grad held before a backward (the driver's hold_grad keeps the parameter's _grad tensor)
// reads twice what it held; the parameter's new grad is unchanged. Guards the "hold_grad → handle * → value*" entry
// of fixtures/expectations/js-pytorch.json (a handle keeps the old tensor's values, missing later accumulations
// and zero_grad): it must not hide a handle whose values are wrong in another way. (Where a second backward adds
// exactly the held values again, twice them is PyTorch's accumulated grad: such a handle then reads right.)
const { torch } = require('js-pytorch');
const backward = torch.Tensor.prototype.backward;
const doubled = (d) => (Array.isArray(d) ? d.map(doubled) : 2 * d);
torch.Tensor.prototype.backward = function (...args) {
  const old = this._grad;
  const result = backward.apply(this, args);
  // A new array, not written into the old one (which another tensor might share).
  if (old instanceof torch.Tensor && this._grad !== old) old._data = doubled(old._data);
  return result;
};
