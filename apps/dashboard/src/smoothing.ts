/**
 * Exponential moving average with bias correction (as TensorBoard's smoothing slider): s_t =
 * w·s_{t-1} + (1-w)·x_t, divided by 1 - w^t so the first points are not pulled to 0. Nulls stay null and
 * do not advance the average. `weight` in [0, 1): 0 = no smoothing.
 */
export function ema(values: ReadonlyArray<number | null>, weight: number): Array<number | null> {
  if (weight <= 0) return [...values];
  let acc = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    acc = acc * weight + (1 - weight) * v;
    n++;
    return acc / (1 - weight ** n);
  });
}
