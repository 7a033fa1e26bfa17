/**
 * The "TonY jobs" side panel: one row per job, newest first, polled from /tony/api/jobs. Rows
 * are kept by job id and updated in place, so a selection, a scroll position or a Kill in
 * progress survives a refresh; the poll stands by while the panel or the page is hidden and
 * backs off while the server does not answer. A stalled job's row is marked; a running job's
 * Stacks button shows its tasks' stacks, grouped, under the row.
 */
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { killJob, listJobs } from './api';
import { el, setText } from './dom';
import { isTerminal, progressText } from './protocol';
import type { JobSummary } from './protocol.gen';
import { StacksButton } from './stackview';

const FREQUENCY = { interval: 2000, backoff: true, max: 30000 };

/** What a row's buttons do: the plugin runs its commands (the same the restorer runs). */
export interface IJobActions {
  openTensorBoard(job: JobSummary): void;
  openLogs(job: JobSummary): void;
  openJob(job: JobSummary): void;
  compare(jobs: JobSummary[]): void;
}

class JobRow {
  constructor(job: JobSummary, panel: JobsPanel) {
    this.job = job;
    this.node = el('div', { class: 'tony-job', 'data-job-id': job.job_id });
    const head = el('div', { class: 'tony-job-head' });
    this.name = el('span', { class: 'tony-job-name' });
    this.state = el('span');
    this.stall = el('span', { class: 'tony-stall-mark' }, 'stalled');
    this.stall.hidden = true;
    this.selected = el('input', { type: 'checkbox', class: 'tony-job-select', title: 'compare' });
    this.selected.onchange = () => panel.selectionChanged();
    const label = el('label', { class: 'tony-job-label' });
    label.append(this.selected, this.name);
    const marks = el('span');
    marks.append(this.stall, this.state);
    head.append(label, marks);
    this.meta = el('div', { class: 'tony-job-meta' });
    this.reason = el('div', { class: 'tony-job-reason' });
    const actions = el('div', { class: 'tony-job-actions' });
    const details = el('button', { class: 'jp-Button tony-open-job' }, 'Details');
    details.onclick = () => panel.actions.openJob(this.job);
    this.tensorboard = el('button', { class: 'jp-Button tony-open-tensorboard' }, 'TensorBoard');
    this.tensorboard.onclick = () => panel.actions.openTensorBoard(this.job);
    const logs = el('button', { class: 'jp-Button tony-open-logs' }, 'Logs');
    logs.onclick = () => panel.actions.openLogs(this.job);
    this.kill = el('button', { class: 'jp-Button tony-kill' }, 'Kill');
    this.kill.onclick = () => void panel.kill(this);
    this.stacks = new StacksButton(job.job_id);
    actions.append(details, this.tensorboard, logs, this.stacks.button, this.kill);
    this.node.append(head, this.meta, this.reason, actions, this.stacks.pane);
    this.update(job);
  }

  update(job: JobSummary): void {
    this.job = job;
    setText(this.name, job.name || job.job_id);
    const stateClass = `tony-state tony-state-${job.state}`;
    if (this.state.className !== stateClass) {
      this.state.className = stateClass;
    }
    this.state.dataset.state = job.state;
    setText(this.state, job.state);
    const meta = [job.job_id, job.backend, `${job.tasks.length} tasks`, progressText(job)];
    setText(this.meta, meta.filter(Boolean).join(' · '));
    // what a YARN job waits for, in the RM's figures; else why it is not running
    const reason = job.waiting || (job.state !== 'RUNNING' ? job.reason : '');
    setText(this.reason, reason);
    this.reason.hidden = !reason;
    this.tensorboard.hidden = !job.endpoints.includes('tensorboard');
    this.kill.hidden = isTerminal(job.state);
    if (isTerminal(job.state)) {
      this.stacks.ended();
    }
    const stalled = typeof job.stalled_since === 'number' && !isTerminal(job.state);
    this.stall.hidden = !stalled;
    if (stalled) {
      const since = new Date((job.stalled_since as number) * 1000).toLocaleTimeString();
      this.stall.title = `no task reported a new step since ${since}: Stacks shows where each is`;
    }
  }

  /** The Kill button while the request is out (and until the list shows the outcome). */
  killing(busy: boolean): void {
    this.kill.disabled = busy;
    this.kill.textContent = busy ? 'Killing…' : 'Kill';
  }

  get isSelected(): boolean {
    return this.selected.checked;
  }

  job: JobSummary;
  readonly node: HTMLDivElement;
  private selected: HTMLInputElement;
  private name: HTMLSpanElement;
  private state: HTMLSpanElement;
  private meta: HTMLDivElement;
  private reason: HTMLDivElement;
  private tensorboard: HTMLButtonElement;
  private kill: HTMLButtonElement;
  private stall: HTMLSpanElement;
  private stacks: StacksButton;
}

export class JobsPanel extends Widget {
  constructor(actions: IJobActions) {
    super();
    this.actions = actions;
    this.id = 'tony-jobs-panel';
    this.title.caption = 'TonY jobs';
    this.title.label = 'TonY';
    this.addClass('tony-jobs');
    this.status = el('div', { class: 'tony-jobs-status' });
    this.list = el('div', { class: 'tony-jobs-list' });
    this.empty = el('div', { class: 'tony-empty' }, 'No jobs yet: run a %%tony cell.');
    this.empty.hidden = true;
    this.compare = el('button', { class: 'jp-Button tony-compare' }, 'Compare');
    this.compare.onclick = () => this.actions.compare(this.selection());
    const bar = el('div', { class: 'tony-jobs-bar' });
    bar.append(el('h3', {}, 'TonY jobs'), this.compare);
    this.node.append(bar, this.status, this.empty, this.list);
    this.selectionChanged();
    this.poll = new Poll({
      name: 'tony-jupyter:jobs',
      factory: () => this.refresh(),
      frequency: FREQUENCY,
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  readonly actions: IJobActions;

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  async kill(row: JobRow): Promise<void> {
    const jobId = row.job.job_id;
    row.killing(true);
    try {
      await killJob(jobId);
    } catch (e) {
      setText(this.status, `kill ${jobId}: ${String(e)}`);
    }
    await this.poll.refresh();
    await this.poll.tick;
    row.killing(false);
  }

  /** The jobs whose boxes are ticked. */
  selection(): JobSummary[] {
    return [...this.rows.values()].filter(r => r.isSelected).map(r => r.job);
  }

  /** "Compare" is there once two jobs or more are ticked. */
  selectionChanged(): void {
    const n = this.selection().length;
    this.compare.hidden = n < 2;
    this.compare.textContent = `Compare ${n}`;
  }

  protected onAfterShow(): void {
    void this.poll.refresh();
  }

  /** One poll tick; a rejection makes the poll back off. */
  private async refresh(): Promise<void> {
    let jobs: JobSummary[];
    try {
      jobs = (await listJobs()).jobs;
    } catch (e) {
      setText(this.status, `cannot list jobs: ${String(e)}`);
      throw e;
    }
    setText(this.status, '');
    this.render(jobs);
  }

  private render(jobs: JobSummary[]): void {
    const seen = new Set<string>();
    jobs.forEach((job, i) => {
      seen.add(job.job_id);
      let row = this.rows.get(job.job_id);
      if (row) {
        row.update(job);
      } else {
        row = new JobRow(job, this);
        this.rows.set(job.job_id, row);
      }
      // moves a node only when the order changed (a new job is added at the top)
      const at = this.list.children[i];
      if (at !== row.node) {
        this.list.insertBefore(row.node, at ?? null);
      }
    });
    for (const [jobId, row] of this.rows) {
      if (!seen.has(jobId)) {
        row.node.remove();
        this.rows.delete(jobId);
      }
    }
    this.selectionChanged();
    this.empty.hidden = jobs.length > 0;
  }

  private poll: Poll;
  private compare: HTMLButtonElement;
  private rows = new Map<string, JobRow>();
  private status: HTMLDivElement;
  private empty: HTMLDivElement;
  private list: HTMLDivElement;
}
