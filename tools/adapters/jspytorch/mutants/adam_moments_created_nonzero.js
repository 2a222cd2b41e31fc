// A planted bug in js-pytorch itself (node -r this file driver.js): optim.Adam's constructor starts the moments at
// m = 0.5, v = 100 instead of zeros (found by a review: the moments made before the first step are never compared,
// the oracle has no state then). Guards the "adam* → exp_avg*" and "adam* → value*" entries of
// fixtures/expectations/js-pytorch.json: the variants start from the specification's zero moments where the oracle
// had none, so moments the library made up cannot become the baseline of the first step.
const { torch } = require('js-pytorch');
const Adam = torch.optim.Adam;
function Planted(...args) {
  const optimizer = new Adam(...args);
  for (const p of optimizer.params) {
    p.m = p.m.add(0.5);
    p.v = p.v.add(100);
  }
  return optimizer;
}
Planted.prototype = Adam.prototype;
torch.optim.Adam = Planted;
