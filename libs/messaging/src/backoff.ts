/**
 * Exponential backoff for redelivery and publish retries: `initialMs * 2^(attempt-1)` capped at `maxMs`,
 * with +-20% jitter so many failed consumers do not retry in lockstep. `attempt` starts at 1.
 */
export function backoffDelay(attempt: number, initialMs = 250, maxMs = 10_000): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Resolve after `ms` (for retry loops only; tests never wait on fixed sleeps). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
