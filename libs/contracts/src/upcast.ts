import type { EventType } from './events';

/**
 * Upcasters turn the data of an older version into the next one, on read (never rewriting the log).
 * Key: `<type>@<fromVersion>`; each step raises the version by one until the current version is reached.
 */
export const UPCASTERS: Record<string, (data: any) => any> = {
  // RewardAssigned v1 (before the grader recorded normalised forms and timing) -> v2.
  'RewardAssigned@1': (d) => ({ normalizedPrediction: null, normalizedGold: null, ms: 0, ...d }),
};

/** Raise `data` from `version` to `target` through the registered upcasters. Throws when a step is missing. */
export function upcastData(type: EventType, version: number, target: number, data: unknown): unknown {
  let v = version;
  let d = data;
  while (v < target) {
    const up = UPCASTERS[`${type}@${v}`];
    if (!up) throw new Error(`no upcaster for ${type} v${v} -> v${v + 1}`);
    d = up(d);
    v += 1;
  }
  return d;
}
