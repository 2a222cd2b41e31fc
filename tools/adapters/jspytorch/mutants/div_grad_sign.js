// A planted bug in js-pytorch itself (node -r this file driver.js): Div.backward gives the divisor b of a / b its
// gradient with the wrong sign, dz * a / b^2 (the library's own value, negated), at finite inputs too; the
// dividend's is unchanged. Guards the two "op:div" entries of fixtures/expectations/js-pytorch.json (b^2 under- and
// overflowing: actual +-inf, actual 0): they must not hide a wrong divisor gradient.
const { torch } = require('js-pytorch');
const { Tensor } = torch;
// Div is not exported: reach its class through the operation a div records.
const Div = new Tensor([1], true).div(new Tensor([2], true)).operation.constructor;
const backward = Div.prototype.backward;
Div.prototype.backward = function (dz, z) {
  const [a, b] = this.cache;
  if (!(b instanceof Tensor && b.requires_grad)) return backward.call(this, dz, z);
  // The library's backward calls a.backward(da, z) (if a requires grad), then b.backward(db, z): negate db, the last
  // call on b with child z (a === b: the second one). Calls that reach b through a's own graph pass another child.
  let toSkip = a === b ? 1 : 0;
  b.backward = function (grad, child) {
    if (child !== z || toSkip-- > 0) return Tensor.prototype.backward.call(this, grad, child);
    delete b.backward;
    return Tensor.prototype.backward.call(this, grad.neg(), child);
  };
  try {
    return backward.call(this, dz, z);
  } finally {
    delete b.backward;
  }
};
