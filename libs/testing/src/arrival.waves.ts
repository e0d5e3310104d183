import { RstarError } from '@rstar/contracts';

/** Wave settings that cannot describe an arrival pattern; the message names the field and what it must be. */
export class WaveSettingsError extends RstarError {
  constructor(field: string, value: unknown, must: string) {
    super('wave_settings', `${field} must be ${must}, got ${JSON.stringify(value)}`);
  }
}

/** Shape of a wave arrival: `waves` steps of `perWave` rollouts each. */
export interface WaveArrival {
  waves: number;
  perWave: number;
  /** Share of a wave that must have finished before the next wave is submitted (0 < x <= 1; default 0.5). */
  overlapAt?: number;
}

/**
 * Submit work as an asynchronous run with staleness bound η = 1 does (issue 26, docs/design/protocol.md §8):
 * wave (step) `w + 1` is submitted once `overlapAt` of wave `w` has finished and all of wave `w - 1` has,
 * so at most two steps' rollouts are in flight together and the next step's arrive while the current
 * one's long tail still runs. `start(wave, index)` begins one item and resolves with its result.
 * Returns the results per wave, in submission order. A rejected item rejects the whole call; no later
 * wave is submitted after one rejected.
 * @throws WaveSettingsError when `waves` or `perWave` is not a positive integer or `overlapAt` is not in (0, 1].
 */
export async function submitInWaves<T>(o: WaveArrival, start: (wave: number, index: number) => Promise<T>): Promise<T[][]> {
  if (!Number.isInteger(o.waves) || o.waves < 1) throw new WaveSettingsError('waves', o.waves, 'a positive integer');
  if (!Number.isInteger(o.perWave) || o.perWave < 1) throw new WaveSettingsError('perWave', o.perWave, 'a positive integer');
  const overlapAt = o.overlapAt ?? 0.5;
  if (!(overlapAt > 0 && overlapAt <= 1)) throw new WaveSettingsError('overlapAt', o.overlapAt, 'a share in (0, 1]');
  const need = Math.max(1, Math.ceil(overlapAt * o.perWave));
  const waves: Promise<T[]>[] = [];
  const triggers: Promise<void>[] = [];
  let failed = false;
  for (let w = 0; w < o.waves; w++) {
    if (w >= 1) await triggers[w - 1];
    if (w >= 2) await waves[w - 2].catch(() => undefined);
    if (failed) break;
    let settled = 0;
    let fire!: () => void;
    triggers.push(new Promise<void>((r) => (fire = r)));
    const items = Array.from({ length: o.perWave }, (_, i) =>
      Promise.resolve()
        .then(() => start(w, i))
        .finally(() => {
          if (++settled === need) fire();
        }),
    );
    const wave = Promise.all(items);
    // Marks the wave handled while the loop waits on other promises; Promise.all below still rejects with its error.
    wave.catch(() => {
      failed = true;
    });
    waves.push(wave);
  }
  return Promise.all(waves);
}
