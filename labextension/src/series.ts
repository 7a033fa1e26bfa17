/**
 * Metric series out of a job's detail (GET /tony/api/jobs/<id>/detail): which metrics its
 * tasks reported and each one's points, against the step when the task reported one, else
 * against seconds since the attempt's first sample.
 */
import type { JobDetail, MetricSample } from './protocol.gen';

/** Sample keys that are not metrics to chart: time, position in training, totals. */
const NOT_METRICS = new Set([
  't',
  'gpus',
  'step',
  'epoch',
  'batch',
  'epochs',
  'steps',
  'epoch_done',
  'time',
  'total_steps',
  'cpu_percent',
  'rss_bytes'
]);

/** Resource charts, after the reported metrics: key -> title and scale. */
export const RESOURCES: { [key: string]: [string, number] } = {
  cpu_percent: ['CPU %', 1],
  rss_bytes: ['RSS (MiB)', 1 / (1 << 20)],
  gpu_utilization: ['GPU %', 1]
};

export type TaskSeries = { [task: string]: MetricSample[] };

/** The last attempt's series (the one the job ended with), by task. */
export function lastAttempt(detail: JobDetail): TaskSeries {
  const attempts = Object.keys(detail.metrics).map(Number);
  if (!attempts.length) {
    return {};
  }
  return detail.metrics[String(Math.max(...attempts))] ?? {};
}

/** A sample's value of `key` (gpu_utilization: its GPUs' mean), undefined without one. */
export function value(sample: MetricSample, key: string): number | undefined {
  if (key === 'gpu_utilization') {
    const gpus = (sample.gpus ?? []).map(g => g.utilization).filter(u => typeof u === 'number');
    return gpus.length ? gpus.reduce((a, b) => a + b, 0) / gpus.length : undefined;
  }
  const v = sample[key];
  return typeof v === 'number' ? v : undefined;
}

/** The reported metrics (loss, accuracy, ...) in these series, sorted; then resources. */
export function metricNames(series: TaskSeries[]): string[] {
  const names = new Set<string>();
  const resources = new Set<string>();
  for (const tasks of series) {
    for (const samples of Object.values(tasks)) {
      for (const s of samples) {
        for (const [k, v] of Object.entries(s)) {
          if (!NOT_METRICS.has(k) && typeof v === 'number') {
            names.add(k);
          }
        }
        for (const k of Object.keys(RESOURCES)) {
          if (value(s, k) !== undefined) {
            resources.add(k);
          }
        }
      }
    }
  }
  return [...[...names].sort(), ...Object.keys(RESOURCES).filter(k => resources.has(k))];
}

/** Whether every sample with a value of `metric` also has a step. */
export function bySteps(samples: MetricSample[][], metric: string): boolean {
  const all = samples.flat().filter(s => value(s, metric) !== undefined);
  return all.length > 0 && all.every(s => typeof s.step === 'number');
}

export function title(metric: string): string {
  return RESOURCES[metric]?.[0] ?? metric;
}

/** One task's points of `metric`, x = its step or seconds since its first sample. */
export function points(
  samples: MetricSample[],
  metric: string,
  steps: boolean
): [number, number][] {
  const t0 = samples.length ? samples[0].t : 0;
  const scale = RESOURCES[metric]?.[1] ?? 1;
  const out: [number, number][] = [];
  for (const s of samples) {
    const y = value(s, metric);
    if (y !== undefined && Number.isFinite(y)) {
      out.push([steps ? (s.step as number) : s.t - t0, y * scale]);
    }
  }
  return steps ? out.sort((a, b) => a[0] - b[0]) : out; // a resumed attempt counts again
}
