/**
 * Comparing runs: two or more jobs picked in the panel, in one main-area tab. Each metric's
 * curves overlaid (the chief's series of each job's last attempt, one colour per job, a
 * legend) and the jobs' specs side by side, the rows whose values differ highlighted.
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { getDetail } from './api';
import { lineChart } from './chart';
import { el } from './dom';
import type { JobDetail, MetricSample } from './protocol.gen';
import { bySteps, lastAttempt, metricNames, points, title } from './series';

/** A spec as flat keys: tasks by type (tasks.worker.instances), lists as JSON. */
export function flatSpec(spec: { [key: string]: unknown }): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (prefix: string, value: unknown): void => {
    if (prefix === 'tasks' && Array.isArray(value)) {
      for (const t of value as { type?: string }[]) {
        walk(`tasks.${t.type ?? '?'}`, { ...t, type: undefined });
      }
    } else if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (v !== undefined) {
          walk(prefix ? `${prefix}.${k}` : k, v);
        }
      }
    } else {
      out.set(prefix, typeof value === 'string' ? value : JSON.stringify(value));
    }
  };
  walk('', spec);
  return out;
}

/** The samples a job is compared by: its chief's, else its first task's with samples. */
function chiefSeries(detail: JobDetail): MetricSample[] {
  const tasks = lastAttempt(detail);
  const chief = detail.job.chief ?? '';
  return tasks[chief] ?? Object.values(tasks).find(s => s.length) ?? [];
}

function label(detail: JobDetail): string {
  return `${detail.job.name || 'job'} (${detail.job.job_id})`;
}

export function specTable(details: JobDetail[]): HTMLTableElement {
  const specs = details.map(d => flatSpec(d.spec));
  const keys = [...new Set(specs.flatMap(s => [...s.keys()]))].sort();
  const differs = (key: string) => new Set(specs.map(s => s.get(key) ?? '')).size > 1;
  keys.sort((a, b) => Number(differs(b)) - Number(differs(a))); // what differs first
  const table = el('table', { class: 'tony-spec-table' });
  const head = el('tr');
  head.append(el('th', {}, 'spec'), ...details.map(d => el('th', {}, label(d))));
  table.append(head);
  for (const key of keys) {
    const values = specs.map(s => s.get(key) ?? '');
    const differs = new Set(values).size > 1;
    const row = el(
      'tr',
      differs ? { class: 'tony-spec-differs', 'data-key': key } : { 'data-key': key }
    );
    row.append(el('td', {}, key), ...values.map(v => el('td', {}, v)));
    table.append(row);
  }
  return table;
}

export class CompareView extends Widget {
  constructor(jobIds: string[]) {
    super();
    this.jobIds = jobIds;
    this.addClass('tony-compare');
    this.node.append(el('div', { class: 'tony-jobs-status' }, 'loading…'));
    void this.load();
  }

  readonly jobIds: string[];

  private async load(): Promise<void> {
    let details: JobDetail[];
    try {
      details = await Promise.all(this.jobIds.map(getDetail));
    } catch (e) {
      this.node.replaceChildren(el('div', { class: 'tony-jobs-status' }, String(e)));
      return;
    }
    const series = details.map(chiefSeries);
    const charts = el('div', { class: 'tony-charts' });
    for (const metric of metricNames(series.map(s => ({ chief: s })))) {
      const steps = bySteps(series, metric);
      const lines = details.map((d, i) => ({
        label: label(d),
        points: points(series[i], metric, steps)
      }));
      charts.append(lineChart(title(metric), steps ? 'step' : 'seconds', lines));
    }
    if (!charts.children.length) {
      charts.append(el('div', { class: 'tony-chart-empty' }, 'these jobs left no metric samples'));
    }
    this.node.replaceChildren(
      el('h2', {}, `Comparing ${details.length} runs`),
      el('h3', {}, 'Metrics (each job\u2019s chief, last attempt)'),
      charts,
      el('h3', {}, 'Specs'),
      specTable(details)
    );
  }
}

export class CompareTab extends MainAreaWidget<CompareView> {
  constructor(jobIds: string[]) {
    super({ content: new CompareView(jobIds) });
    this.id = `tony-compare-${jobIds.join('-')}`;
    this.title.label = `Compare · ${jobIds.length} runs`;
    this.title.closable = true;
  }

  get jobIds(): string[] {
    return this.content.jobIds;
  }
}
