/** One line of a chart: its label and y per x (null = no value at that x). */
export interface PlotSeries {
  label: string;
  points: Array<{ x: number; y: number | null }>;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));

/**
 * A self-contained SVG line chart (no dependencies; opens in any browser): axes with 5 ticks each,
 * one polyline with point markers per series, a legend. Gaps (null y) break the line. `yRange`
 * fixes the y axis (e.g. [0, 1] for rates); otherwise it spans the data.
 */
export function lineChartSvg(o: { title: string; xLabel: string; yLabel: string; series: PlotSeries[]; yRange?: [number, number]; width?: number; height?: number }): string {
  const W = o.width ?? 640;
  const H = o.height ?? 360;
  const m = { l: 60, r: 20, t: 36, b: 48 };
  const pts = o.series.flatMap((s) => s.points);
  const xs = pts.map((p) => p.x);
  const ys = pts.map((p) => p.y).filter((y): y is number => y !== null && Number.isFinite(y));
  const x0 = xs.length ? Math.min(...xs) : 0;
  const x1 = xs.length ? Math.max(...xs) : 1;
  let [y0, y1] = o.yRange ?? [ys.length ? Math.min(...ys) : 0, ys.length ? Math.max(...ys) : 1];
  if (y1 - y0 < 1e-9) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const sx = (x: number) => m.l + ((x - x0) / Math.max(1e-9, x1 - x0)) * (W - m.l - m.r);
  const sy = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(o.title)}</text>`,
    `<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="black"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="black"/>`,
    `<text x="${(W + m.l) / 2}" y="${H - 10}" text-anchor="middle">${esc(o.xLabel)}</text>`,
    `<text x="14" y="${H / 2}" text-anchor="middle" transform="rotate(-90 14 ${H / 2})">${esc(o.yLabel)}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const yv = y0 + ((y1 - y0) * i) / 4;
    const xv = x0 + ((x1 - x0) * i) / 4;
    out.push(`<line x1="${m.l}" y1="${sy(yv)}" x2="${W - m.r}" y2="${sy(yv)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${sy(yv) + 4}" text-anchor="end">${fmt(yv)}</text>`);
    out.push(`<text x="${sx(xv)}" y="${H - m.b + 16}" text-anchor="middle">${fmt(xv)}</text>`);
  }
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
    out.push(`<rect x="${W - m.r - 170}" y="${m.t + 4 + k * 16}" width="10" height="10" fill="${c}"/>`);
    out.push(`<text x="${W - m.r - 155}" y="${m.t + 13 + k * 16}">${esc(s.label)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
