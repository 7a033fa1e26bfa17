/**
 * A line chart in plain SVG: a few series of (x, y) points on shared axes, a legend under it.
 * The job page draws one per metric (a line per task) and the comparison one per metric (a
 * line per job). Plain SVG rather than a charting library: a few hundred points per line
 * (am/metrics.py keeps at most 512 samples a series) need no more, and nothing is added to
 * the bundle JupyterLab loads.
 */
import { el, svg } from './dom';

export interface ISeries {
  label: string;
  points: [number, number][];
}

/** Colours of the lines, in order (category10). */
export const COLORS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f'
];

const W = 420;
const H = 200;
const M = { left: 52, right: 10, top: 10, bottom: 26 };
const DOTS_UP_TO = 40; // a sparse series also gets a dot per point: two points are no trend

/** A number on an axis: short, as 0.0123, 12.3, 4.5k. */
export function shortNumber(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) {
    return `${(v / 1e6).toPrecision(3)}M`;
  }
  if (a >= 1e4) {
    return `${(v / 1e3).toPrecision(3)}k`;
  }
  if (a === 0 || a >= 1) {
    return String(Math.round(v * 100) / 100);
  }
  return v.toPrecision(3);
}

function extent(values: number[]): [number, number] {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    lo -= Math.abs(lo) * 0.1 || 1;
    hi += Math.abs(hi) * 0.1 || 1;
  }
  return [lo, hi];
}

/** A chart titled `title`; `xLabel` names the x axis (step, or seconds). */
export function lineChart(title: string, xLabel: string, series: ISeries[]): HTMLElement {
  const box = el('div', { class: 'tony-chart', 'data-metric': title });
  box.append(el('div', { class: 'tony-chart-title' }, title));
  const drawn = series.filter(s => s.points.length > 0);
  const xs = drawn.flatMap(s => s.points.map(p => p[0]));
  const ys = drawn.flatMap(s => s.points.map(p => p[1]));
  const root = svg('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img' });
  box.append(root);
  if (!xs.length) {
    box.append(el('div', { class: 'tony-chart-empty' }, 'no samples'));
    return box;
  }
  const [x0, x1] = extent(xs);
  const [y0, y1] = extent(ys);
  const px = (x: number) => M.left + ((x - x0) / (x1 - x0)) * (W - M.left - M.right);
  const py = (y: number) => H - M.bottom - ((y - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  const axes = `M${M.left},${M.top}V${H - M.bottom}H${W - M.right}`;
  root.append(svg('path', { d: axes, class: 'tony-chart-axis' }));
  for (const [y, anchor] of [
    [y0, H - M.bottom],
    [y1, M.top + 8]
  ]) {
    root.append(svg('text', { x: M.left - 4, y: anchor, 'text-anchor': 'end' }, shortNumber(y)));
  }
  root.append(svg('text', { x: M.left, y: H - 8 }, shortNumber(x0)));
  root.append(svg('text', { x: W - M.right, y: H - 8, 'text-anchor': 'end' }, shortNumber(x1)));
  root.append(svg('text', { x: (W + M.left) / 2, y: H - 8, 'text-anchor': 'middle' }, xLabel));
  const legend = el('div', { class: 'tony-chart-legend' });
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    if (s.points.length) {
      const d = s.points
        .map(([x, y], j) => `${j ? 'L' : 'M'}${px(x).toFixed(1)},${py(y).toFixed(1)}`)
        .join('');
      const line = svg('path', { d, class: 'tony-chart-line', stroke: color });
      line.append(svg('title', {}, s.label));
      root.append(line);
      if (s.points.length <= DOTS_UP_TO) {
        for (const [x, y] of s.points) {
          root.append(svg('circle', { cx: px(x), cy: py(y), r: 2.5, fill: color }));
        }
      }
    }
    const key = el('span', { class: 'tony-chart-key' });
    key.append(el('span', { class: 'tony-chart-swatch', style: `background:${color}` }), s.label);
    legend.append(key);
  });
  box.append(legend);
  return box;
}
