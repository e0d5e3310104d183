import type { EventType } from './events';
import { UnknownEventError } from './errors';

/**
 * Upcasters turn the data of an older version into the next one, on read (never rewriting the log).
 * Key: `<type>@<fromVersion>`; each step raises the version by one until the current version is reached.
 */
export const UPCASTERS: Record<string, (data: any) => any> = {
  // RewardAssigned v1 (before the grader recorded normalised forms and timing) -> v2. Nothing was
  // measured, so the time is null (not 0, which would read as a measured instant grade).
  'RewardAssigned@1': (d) => ({ normalizedPrediction: null, normalizedGold: null, ms: null, ...d }),
};

/** Raise `data` from `version` to `target` through the registered upcasters. Throws when a step is missing. */
export function upcastData(type: EventType, version: number, target: number, data: unknown): unknown {
  let v = version;
  let d = data;
  while (v < target) {
    const up = UPCASTERS[`${type}@${v}`];
    if (!up) throw new UnknownEventError(`no upcaster for ${type} v${v} -> v${v + 1}; this code cannot read that version`, 'version');
    d = up(d);
    v += 1;
  }
  return d;
}
