// A planted bug in js-pytorch itself (node -r this file driver.js): Adam.step() leaves every second moment 1.5 times
// too large (the parameter update it already made is the library's own). Guards the "adam* → exp_avg*" entry of
// fixtures/expectations/js-pytorch.json: the variant adam.moments_from_its_own_state accepts moments updated by the
// specification's formula from the library's own state and betas, never moments of another size.
const { torch } = require('js-pytorch');
const step = torch.optim.Adam.prototype.step;
torch.optim.Adam.prototype.step = function (...args) {
  const result = step.apply(this, args);
  for (const p of this.params) if (p.v) p.v = p.v.mul(1.5);
  return result;
};
