// A planted bug in js-pytorch itself (node -r this file driver.js): Adam.step() steps with twice its learning rate
// (the lr field is doubled for the step and restored after it, so the group's reported lr is unchanged). Guards the
// "adam* → value" entry of fixtures/expectations/js-pytorch.json (parameters moved without bias correction): it
// must not hide an Adam step of the wrong size.
const { torch } = require('js-pytorch');
const step = torch.optim.Adam.prototype.step;
torch.optim.Adam.prototype.step = function (...args) {
  const lr = this.lr;
  this.lr = 2 * lr;
  try {
    return step.apply(this, args);
  } finally {
    this.lr = lr;
  }
};
