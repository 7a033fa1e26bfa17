/**
 * The job page's task table: one row per task of the current (or last) attempt, each task's
 * CPU, memory and GPU use with a sparkline of its recent samples (the attempt's series).
 */
import { shortNumber } from './chart';
import { el, svg } from './dom';
import type { MetricSample, TaskView } from './protocol.gen';
import { value, type TaskSeries } from './series';

const COLUMNS = ['task', 'state', 'host', 'CPU %', 'RSS', 'GPU', 'progress'];
const SPARK_W = 64;
const SPARK_H = 14;
const SPARK_SAMPLES = 120; // the newest ones: a few minutes at the heartbeat's pace

function bytes(n: number | null): string {
  if (n === null) {
    return '';
  }
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : `${(n / (1 << 20)).toFixed(0)} MiB`;
}

function gpus(task: TaskView): string {
  return task.gpus
    .map(g => `#${g.index} ${g.utilization ?? '?'}% ${g.memory_used_mb ?? '?'} MiB`)
    .join(', ');
}

function progress(task: TaskView): string {
  return Object.entries(task.progress)
    .filter(([k, v]) => ['epoch', 'step', 'loss', 'accuracy'].includes(k) && v !== null)
    .map(([k, v]) => `${k} ${typeof v === 'number' ? shortNumber(v) : v}`)
    .join(' · ');
}

function gpuMemory(sample: MetricSample): number | undefined {
  const mb = (sample.gpus ?? []).map(g => g.memory_used_mb).filter(m => typeof m === 'number');
  return mb.length ? mb.reduce((a, b) => a + b, 0) : undefined;
}

/**
 * A sparkline of one series of a task's samples (oldest left), percentages drawn against 100
 * at least; its title names the newest value and the peak. Nothing for fewer than two values.
 */
export function sparkline(
  samples: MetricSample[],
  key: string,
  title: string,
  shown: (v: number) => string,
  floor = 0
): SVGSVGElement | null {
  const pick = key === 'gpu_memory' ? gpuMemory : (s: MetricSample) => value(s, key);
  const vals = samples
    .slice(-SPARK_SAMPLES)
    .map(pick)
    .filter((v): v is number => v !== undefined);
  if (vals.length < 2) {
    return null;
  }
  const top = Math.max(floor, ...vals) || 1;
  const points = vals
    .map((v, i) => {
      const x = (i * SPARK_W) / (vals.length - 1);
      const y = SPARK_H - 1 - (Math.max(0, v) / top) * (SPARK_H - 2);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
  const root = svg('svg', {
    class: 'tony-spark',
    'data-series': key,
    width: SPARK_W,
    height: SPARK_H,
    viewBox: `0 0 ${SPARK_W} ${SPARK_H}`,
    role: 'img'
  });
  root.append(
    svg(
      'title',
      {},
      `${title}: now ${shown(vals[vals.length - 1])}, peak ${shown(Math.max(...vals))}`
    ),
    svg('polyline', { points, fill: 'none', stroke: 'currentColor', 'stroke-width': 1.2 })
  );
  return root;
}

const pct = (v: number) => `${v.toFixed(0)}%`;
const mib = (v: number) => bytes(v);
const gib = (v: number) => `${(v / 1024).toFixed(1)} GiB`;

/** The table; `series`: the attempt's samples by task, drawn as sparklines beside the figures. */
export function taskTable(tasks: TaskView[], series: TaskSeries = {}): HTMLTableElement {
  const table = el('table', { class: 'tony-task-table' });
  const head = el('tr');
  const withGpus = tasks.some(t => t.gpus.length > 0);
  for (const c of COLUMNS.filter(c => c !== 'GPU' || withGpus)) {
    head.append(el('th', {}, c));
  }
  table.append(head);
  for (const t of tasks) {
    const samples = series[t.id] ?? [];
    const row = el('tr', { 'data-task': t.id });
    const cells: [string, (SVGSVGElement | null)[]][] = [
      [t.id, []],
      [t.state, []],
      [t.host ?? '', []],
      [
        t.cpu_percent === null ? '' : t.cpu_percent.toFixed(0),
        [sparkline(samples, 'cpu_percent', 'CPU', pct, 100)]
      ],
      [bytes(t.rss_bytes), [sparkline(samples, 'rss_bytes', 'memory', mib)]],
      ...(withGpus
        ? [
            [
              gpus(t),
              [
                sparkline(samples, 'gpu_utilization', 'GPU utilization', pct, 100),
                sparkline(samples, 'gpu_memory', 'GPU memory', gib)
              ]
            ] as [string, (SVGSVGElement | null)[]]
          ]
        : []),
      [progress(t), []]
    ];
    cells.forEach(([text, sparks], i) => {
      const td = el('td', i === 1 ? { class: `tony-state tony-state-${t.state}` } : {}, text);
      for (const s of sparks) {
        if (s) {
          td.append(' ', s);
        }
      }
      row.append(td);
    });
    table.append(row);
  }
  return table;
}
