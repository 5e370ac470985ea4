// Preloaded with `node --import` into a process under test: its wall clock (Date.now, new Date())
// runs SKEWED_CLOCK_MS ahead (or behind, when negative), as on a machine whose clock is off. The
// monotonic clock (performance.now) is left alone, as a wrong wall clock leaves it.
import process from 'node:process';

const skew = Number(process.env.SKEWED_CLOCK_MS ?? '0');
const RealDate = globalThis.Date;

class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + skew);
    else super(...args);
  }

  static now() {
    return RealDate.now() + skew;
  }
}

globalThis.Date = SkewedDate;
