/**
 * A job's attempts on a timeline (SVG): one bar per attempt from its start to its end (or
 * now), coloured by how it ended, its reason in the bar's tooltip and beside it.
 */
import { el, svg } from './dom';
import type { AttemptSpan } from './protocol.gen';

const W = 860;
const ROW = 26;
const LEFT = 90;

export function duration(seconds: number): string {
  if (seconds < 90) {
    return `${seconds.toFixed(1)} s`;
  }
  if (seconds < 5400) {
    return `${(seconds / 60).toFixed(1)} min`;
  }
  return `${(seconds / 3600).toFixed(1)} h`;
}

export function timeline(attempts: AttemptSpan[], now: number): HTMLElement {
  const box = el('div', { class: 'tony-timeline' });
  const spans = attempts.filter(a => typeof a.started === 'number');
  if (!spans.length) {
    box.append(el('div', { class: 'tony-chart-empty' }, 'no attempts recorded'));
    return box;
  }
  const t0 = Math.min(...spans.map(a => a.started as number));
  const t1 = Math.max(...spans.map(a => a.finished ?? now), t0 + 1e-3);
  const x = (t: number) => LEFT + ((t - t0) / (t1 - t0)) * (W - LEFT - 10);
  const height = spans.length * ROW + 22;
  const root = svg('svg', { width: W, height, viewBox: `0 0 ${W} ${height}`, role: 'img' });
  spans.forEach((a, i) => {
    const end = a.finished ?? now;
    const y = i * ROW + 4;
    const bar = svg('rect', {
      x: x(a.started as number),
      y,
      width: Math.max(2, x(end) - x(a.started as number)),
      height: ROW - 8,
      class: `tony-attempt tony-attempt-${a.state}`,
      'data-attempt': a.attempt
    });
    const took = duration(end - (a.started as number));
    bar.append(svg('title', {}, `attempt ${a.attempt}: ${a.state}, ${took}. ${a.reason ?? ''}`));
    root.append(svg('text', { x: 0, y: y + ROW / 2 }, `attempt ${a.attempt}`), bar);
    const label = `${a.state} · ${took}${a.task ? ` · ${a.task}` : ''}`;
    root.append(
      svg(
        'text',
        { x: x(a.started as number) + 4, y: y + ROW / 2, class: 'tony-attempt-label' },
        label
      )
    );
  });
  const axisY = spans.length * ROW + 16;
  root.append(svg('text', { x: LEFT, y: axisY }, '0 s'));
  root.append(svg('text', { x: W - 10, y: axisY, 'text-anchor': 'end' }, duration(t1 - t0)));
  box.append(root);
  for (const a of spans.filter(s => s.reason && s.state !== 'SUCCEEDED')) {
    box.append(el('div', { class: 'tony-attempt-reason' }, `attempt ${a.attempt}: ${a.reason}`));
  }
  return box;
}
