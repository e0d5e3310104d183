import { RstarError } from '@rstar/contracts';
/** A condition a test waited for did not come true in time; the message names it and the last value seen. */
export class WaitTimeoutError extends RstarError {
  constructor(what: string, timeoutMs: number, last: unknown) {
    super('wait_timeout', `timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : ` (last: ${JSON.stringify(last)?.slice(0, 300)})`}`);
  }
}

/** Options of {@link until}. */
export interface UntilOptions {
  /** Give up after this long (ms; default 60 000 — generous, for a loaded 2-core machine). */
  timeoutMs?: number;
  /** Poll interval (ms; default 25). */
  everyMs?: number;
}

/**
 * Poll `check` until it returns something other than `false`, `undefined` or `null`, and return that.
 * Tests wait on progress this way, never on fixed sleeps. An exception from `check` ends the wait.
 * @throws WaitTimeoutError naming `what` after `timeoutMs`.
 */
export async function until<T>(check: () => T | Promise<T>, what: string, opts: UntilOptions = {}): Promise<Exclude<T, false | undefined | null>> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const t0 = Date.now();
  for (;;) {
    const v = await check();
    if (v !== false && v !== undefined && v !== null) return v as Exclude<T, false | undefined | null>;
    if (Date.now() - t0 > timeoutMs) throw new WaitTimeoutError(what, timeoutMs, v);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 25));
  }
}
