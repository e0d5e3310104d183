/** One line of a chart: its label and y per x (null = no value at that x). */
export interface PlotSeries {
  label: string;
  points: Array<{ x: number; y: number | null }>;
}

/** A stage of the run: its name and first/last step (drawn as a shaded band with its name). */
export interface PlotStage {
  name: string;
  first: number;
  last: number;
}

/** A marked point (a held-out evaluation): drawn as a diamond with its label. */
export interface PlotMark {
  x: number;
  y: number;
  label: string;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const BANDS = ['#f3f6fb', '#fdf6ec'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));

/** Integer ticks from `lo` to `hi` (inclusive ends rounded inward), at most about `max` of them, at a step of 1, 2, 5, 10, 20, ... */
export function integerTicks(lo: number, hi: number, max = 8): number[] {
  const a = Math.ceil(lo);
  const b = Math.floor(hi);
  if (b < a) return [];
  const span = Math.max(1, b - a);
  // The smallest of 1·10^k, 2·10^k, 5·10^k that keeps the tick count within `max`.
  const candidates: number[] = [];
  for (let p = 1; p <= 1e9; p *= 10) candidates.push(p, 2 * p, 5 * p);
  const step = candidates.find((s) => span / s <= max) ?? span;
  const out: number[] = [];
  for (let t = Math.ceil(a / step) * step; t <= b; t += step) out.push(t + 0); // + 0: no -0
  return out;
}

/**
 * Series whose values equal an earlier series' at every x are dropped and their label joined to it
 * (`reward (all rollouts) = pass rate`): with a binary reward the mean reward and the pass rate are the
 * same curve, drawn once.
 */
export function dedupeSeries(series: readonly PlotSeries[]): PlotSeries[] {
  const out: PlotSeries[] = [];
  const key = (s: PlotSeries) => JSON.stringify(s.points.map((p) => [p.x, p.y === null ? null : Math.round(p.y * 1e9) / 1e9]));
  const seen = new Map<string, PlotSeries>();
  for (const s of series) {
    if (s.points.every((p) => p.y === null)) continue;
    const k = key(s);
    const first = seen.get(k);
    if (first) first.label = `${first.label} = ${s.label}`;
    else {
      const copy = { label: s.label, points: s.points };
      seen.set(k, copy);
      out.push(copy);
    }
  }
  return out;
}

/**
 * A self-contained SVG line chart (no dependencies; opens in any browser): a legend row under the title,
 * y ticks (5), x ticks at integers when every x is an integer (steps), one shaded band per stage with its
 * name, one polyline with point markers per series (gaps, null y, break the line), and marked points
 * (held-out evaluations) as labelled diamonds. `yRange` fixes the y axis (e.g. [0, 1] for rates);
 * otherwise it spans the data.
 */
export function lineChartSvg(o: {
  title: string;
  xLabel: string;
  yLabel: string;
  series: PlotSeries[];
  yRange?: [number, number];
  width?: number;
  height?: number;
  stages?: PlotStage[];
  marks?: PlotMark[];
}): string {
  const W = o.width ?? 640;
  const H = o.height ?? 360;
  const legendRows = Math.ceil((o.series.length + (o.marks?.length ? 1 : 0)) / 3);
  const m = { l: 60, r: 20, t: 34 + legendRows * 16 + 6, b: 48 };
  const pts = o.series.flatMap((s) => s.points);
  const xs = [...pts.map((p) => p.x), ...(o.marks ?? []).map((k) => k.x), ...(o.stages ?? []).flatMap((s) => [s.first, s.last])];
  const ys = [...pts.map((p) => p.y), ...(o.marks ?? []).map((k) => k.y)].filter((y): y is number => y !== null && Number.isFinite(y));
  const integral = pts.length > 0 && pts.every((p) => Number.isInteger(p.x));
  let x0 = xs.length ? Math.min(...xs) : 0;
  let x1 = xs.length ? Math.max(...xs) : 1;
  if (integral) [x0, x1] = [x0 - 0.5, x1 + 0.5];
  let [y0, y1] = o.yRange ?? [ys.length ? Math.min(...ys) : 0, ys.length ? Math.max(...ys) : 1];
  if (y1 - y0 < 1e-9) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const sx = (x: number) => m.l + ((x - x0) / Math.max(1e-9, x1 - x0)) * (W - m.l - m.r);
  const sy = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(o.title)}</text>`,
  ];
  (o.stages ?? []).forEach((s, k) => {
    const a = sx(s.first - (integral ? 0.5 : 0));
    const b = sx(s.last + (integral ? 0.5 : 0));
    out.push(`<rect x="${a.toFixed(1)}" y="${m.t}" width="${Math.max(0, b - a).toFixed(1)}" height="${H - m.t - m.b}" fill="${BANDS[k % 2]}"/>`);
    out.push(`<text x="${((a + b) / 2).toFixed(1)}" y="${m.t + 13}" text-anchor="middle" fill="#667" font-size="11">${esc(s.name)}</text>`);
    if (k > 0) out.push(`<line x1="${a.toFixed(1)}" y1="${m.t}" x2="${a.toFixed(1)}" y2="${H - m.b}" stroke="#99a" stroke-dasharray="4 3"/>`);
  });
  out.push(
    `<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="black"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="black"/>`,
    `<text x="${(W + m.l) / 2}" y="${H - 10}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text x="14" y="${(H + m.t - m.b) / 2}" text-anchor="middle" transform="rotate(-90 14 ${(H + m.t - m.b) / 2})">${esc(o.yLabel)}</text>`,
  );
  for (let i = 0; i <= 4; i++) {
    const yv = y0 + ((y1 - y0) * i) / 4;
    out.push(`<line x1="${m.l}" y1="${sy(yv)}" x2="${W - m.r}" y2="${sy(yv)}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${m.l - 6}" y="${sy(yv) + 4}" text-anchor="end">${fmt(yv)}</text>`);
  }
  const xticks = integral ? integerTicks(x0, x1) : [0, 1, 2, 3, 4].map((i) => x0 + ((x1 - x0) * i) / 4);
  for (const xv of xticks) {
    out.push(`<line x1="${sx(xv)}" y1="${H - m.b}" x2="${sx(xv)}" y2="${H - m.b + 4}" stroke="black"/>`);
    out.push(`<text x="${sx(xv)}" y="${H - m.b + 16}" text-anchor="middle">${integral ? String(xv) : fmt(xv)}</text>`);
  }
  const legend = (k: number, mark: string, label: string) => {
    const lx = m.l + (k % 3) * ((W - m.l - m.r) / 3);
    const ly = 32 + Math.floor(k / 3) * 16;
    out.push(mark.replace(/\{x\}/g, String(lx)).replace(/\{y\}/g, String(ly)));
    out.push(`<text x="${lx + 15}" y="${ly + 9}">${esc(label)}</text>`);
  };
  o.series.forEach((s, k) => {
    const c = COLORS[k % COLORS.length];
    let seg: string[] = [];
    const flush = () => {
      if (seg.length > 1) out.push(`<polyline fill="none" stroke="${c}" stroke-width="2" points="${seg.join(' ')}"/>`);
      seg = [];
    };
    for (const p of s.points) {
      if (p.y === null || !Number.isFinite(p.y)) {
        flush();
        continue;
      }
      seg.push(`${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
      out.push(`<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="2.5" fill="${c}"/>`);
    }
    flush();
    legend(k, `<rect x="{x}" y="{y}" width="10" height="10" fill="${c}"/>`, s.label);
  });
  if (o.marks?.length) {
    for (const k of o.marks) {
      const x = sx(k.x);
      const y = sy(k.y);
      out.push(`<path d="M ${x.toFixed(1)} ${(y - 6).toFixed(1)} l 6 6 l -6 6 l -6 -6 z" fill="#111"/>`);
      out.push(`<text x="${(x + 8).toFixed(1)}" y="${(y - 6).toFixed(1)}" font-size="11">${esc(k.label)}</text>`);
    }
    legend(o.series.length, `<path d="M {x} {y} m 5 0 l 5 5 l -5 5 l -5 -5 z" fill="#111"/>`, 'held-out pass@1');
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
