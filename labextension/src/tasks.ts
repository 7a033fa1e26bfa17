/** The job page's task table: one row per task of the current (or last) attempt. */
import { shortNumber } from './chart';
import { el } from './dom';
import type { TaskView } from './protocol.gen';

const COLUMNS = ['task', 'state', 'host', 'CPU %', 'RSS', 'GPU', 'progress'];

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

export function taskTable(tasks: TaskView[]): HTMLTableElement {
  const table = el('table', { class: 'tony-task-table' });
  const head = el('tr');
  const withGpus = tasks.some(t => t.gpus.length > 0);
  for (const c of COLUMNS.filter(c => c !== 'GPU' || withGpus)) {
    head.append(el('th', {}, c));
  }
  table.append(head);
  for (const t of tasks) {
    const row = el('tr', { 'data-task': t.id });
    const cells = [
      t.id,
      t.state,
      t.host ?? '',
      t.cpu_percent === null ? '' : t.cpu_percent.toFixed(0),
      bytes(t.rss_bytes),
      ...(withGpus ? [gpus(t)] : []),
      progress(t)
    ];
    cells.forEach((text, i) => {
      row.append(el('td', i === 1 ? { class: `tony-state tony-state-${t.state}` } : {}, text));
    });
    table.append(row);
  }
  return table;
}
