/**
 * The job page's log view: pick a task, type to keep only the lines that contain the text
 * (case-insensitive), matches highlighted. The log is read once per task (then, while the job
 * runs, what it added) and filtered here, so each keystroke costs no request.
 */
import { Widget } from '@lumino/widgets';

import { getLogs } from './api';
import { el, setText } from './dom';

const MAX_LINES = 5000; // shown at once; the count says how many matched

export class LogSearch extends Widget {
  constructor(jobId: string) {
    super();
    this.jobId = jobId;
    this.addClass('tony-log-search');
    const bar = el('div', { class: 'tony-logs-bar' });
    this.select = el('select', { class: 'tony-log-search-task' });
    this.select.onchange = () => void this.load();
    this.query = el('input', {
      class: 'tony-log-search-query',
      type: 'search',
      placeholder: 'search the log'
    });
    this.query.oninput = () => this.render();
    this.count = el('span', { class: 'tony-log-search-count' });
    bar.append(el('span', {}, 'task '), this.select, this.query, this.count);
    this.pre = el('pre', { class: 'tony-logs-text tony-log-search-text' });
    this.node.append(bar, this.pre);
  }

  /** The job's tasks; then what the selected task's log has added (all of it at first). */
  setTasks(tasks: string[]): void {
    const same = tasks.join() === Array.from(this.select.options, o => o.value).join();
    if (!same) {
      const keep = this.select.value;
      this.select.textContent = '';
      for (const t of tasks) {
        this.select.append(el('option', { value: t }, t));
      }
      if (tasks.includes(keep)) {
        this.select.value = keep;
      }
    }
    void this.load();
  }

  /** One read at a time (the page refreshes while a read may be out); then one more. */
  private async load(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    try {
      await this.read();
    } finally {
      this.loading = false;
    }
    if (this.again) {
      this.again = false;
      await this.load();
    }
  }

  private async read(): Promise<void> {
    const task = this.select.value;
    if (!task) {
      return;
    }
    if (task !== this.task) {
      [this.task, this.text, this.offset] = [task, '', 0];
    }
    const before = this.text.length;
    try {
      for (;;) {
        const got = await getLogs(this.jobId, task, this.offset);
        if (task !== this.task || !got.text || got.offset === this.offset) {
          break;
        }
        this.text += got.text;
        this.offset = got.offset;
      }
    } catch (e) {
      setText(this.count, String(e));
      return;
    }
    if (task === this.task && (this.text.length !== before || !before)) {
      this.lines = this.text.split('\n');
      if (this.lines[this.lines.length - 1] === '') {
        this.lines.pop();
      }
      this.render();
    }
  }

  private render(): void {
    const q = this.query.value.toLowerCase();
    const hits = q ? this.lines.filter(l => l.toLowerCase().includes(q)) : this.lines;
    this.pre.textContent = '';
    for (const line of hits.slice(0, MAX_LINES)) {
      const div = el('div', { class: 'tony-log-line' });
      let at = 0;
      const low = line.toLowerCase();
      for (let i = q ? low.indexOf(q) : -1; i >= 0; i = low.indexOf(q, at)) {
        div.append(line.slice(at, i), el('mark', {}, line.slice(i, i + q.length)));
        at = i + q.length;
      }
      div.append(line.slice(at));
      this.pre.append(div);
    }
    const shown = hits.length > MAX_LINES ? ` (first ${MAX_LINES} shown)` : '';
    setText(
      this.count,
      q ? `${hits.length} of ${this.lines.length} lines${shown}` : `${this.lines.length} lines`
    );
  }

  readonly jobId: string;
  private loading = false;
  private again = false;
  private task = '';
  private text = '';
  private offset = 0;
  private lines: string[] = [];
  private select: HTMLSelectElement;
  private query: HTMLInputElement;
  private count: HTMLSpanElement;
  private pre: HTMLPreElement;
}
