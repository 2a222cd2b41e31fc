// A planted bug in js-pytorch itself (node -r this file driver.js): Adam.step() changes nothing. The masks for its
// missing bias correction and its default betas must not hide an optimizer that does not step.
const { torch } = require('js-pytorch');
torch.optim.Adam.prototype.step = function () {};
