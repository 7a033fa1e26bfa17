/**
 * A job's page, a main-area tab opened from the panel's "Details": its header (name, state,
 * backend, reason; a stall, with the stacks gathered when it was marked; GPUs idle), its
 * attempts on a timeline, the task table (sparklines of each task's use), a chart per metric
 * (a line per task, the last attempt's), a Stacks button and its logs with a search box. Read from
 * /tony/api/jobs/<id>/detail, again every few seconds while the job runs (the log: what was
 * added since).
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';
import { Panel, Widget } from '@lumino/widgets';

import { getDetail } from './api';
import { lineChart } from './chart';
import { el, setText } from './dom';
import { LogSearch } from './logsearch';
import { isTerminal } from './protocol';
import type { JobDetail } from './protocol.gen';
import { bySteps, lastAttempt, metricNames, points, title } from './series';
import { StacksButton, stackGroupsView } from './stackview';
import { taskTable } from './tasks';
import { timeline } from './timeline';

const FREQUENCY = { interval: 3000, backoff: true, max: 30000 };

/** The page's sections, rebuilt on each read (a few small nodes). */
class JobSections extends Widget {
  constructor() {
    super();
    this.addClass('tony-job-sections');
  }

  render(detail: JobDetail): void {
    const job = detail.job;
    const head = el('div', { class: 'tony-page-head' });
    head.append(
      el('h2', {}, job.name || job.job_id),
      el('span', { class: `tony-state tony-state-${job.state}` }, job.state)
    );
    const meta = [job.job_id, job.backend, `attempt ${job.attempt} of ${job.max_attempts}`];
    const sections: HTMLElement[] = [head, el('div', { class: 'tony-job-meta' }, meta.join(' · '))];
    if (job.reason) {
      sections.push(el('div', { class: 'tony-job-reason' }, job.reason));
    }
    if (detail.damaged && detail.damaged !== job.reason) {
      // what of the job's record could not be read, and what to do (server_ext/detail.py)
      sections.push(el('div', { class: 'tony-job-reason tony-job-damaged' }, detail.damaged));
    }
    if (detail.stall) {
      sections.push(el('div', { class: 'tony-job-reason tony-stall' }, detail.stall));
    }
    if (detail.stall_stacks) {
      sections.push(stackGroupsView(detail.stall_stacks, 'stacks when the job was marked stalled'));
    }
    if (detail.gpu_idle) {
      sections.push(el('div', { class: 'tony-gpu-idle' }, detail.gpu_idle));
    }
    sections.push(
      el('h3', {}, 'Attempts'),
      timeline(detail.attempts, job.now || job.finished || 0)
    );
    sections.push(el('h3', {}, 'Tasks'), taskTable(job.tasks, lastAttempt(detail)));
    sections.push(el('h3', {}, 'Metrics'), this.charts(detail));
    this.node.replaceChildren(...sections);
  }

  private charts(detail: JobDetail): HTMLElement {
    const box = el('div', { class: 'tony-charts' });
    const tasks = lastAttempt(detail);
    const names = metricNames([tasks]);
    if (!names.length) {
      const why = isTerminal(detail.job.state)
        ? 'this job left no metric samples'
        : 'no samples yet';
      box.append(el('div', { class: 'tony-chart-empty' }, why));
    }
    for (const metric of names) {
      const steps = bySteps(Object.values(tasks), metric);
      const series = Object.entries(tasks).map(([task, samples]) => ({
        label: task,
        points: points(samples, metric, steps)
      }));
      box.append(lineChart(title(metric), steps ? 'step' : 'seconds', series));
    }
    return box;
  }
}

export class JobView extends Panel {
  constructor(jobId: string) {
    super();
    this.jobId = jobId;
    this.addClass('tony-job-page');
    this.status = new Widget({ node: el('div', { class: 'tony-jobs-status' }) });
    this.logs = new LogSearch(jobId);
    this.stacks = new StacksButton(jobId);
    const stacks = el('div', { class: 'tony-job-stacks' });
    stacks.append(el('h3', {}, 'Stacks'), this.stacks.button, this.stacks.pane);
    this.stacksBox = new Widget({ node: stacks });
    this.addWidget(this.status);
    this.addWidget(this.sections);
    this.addWidget(this.stacksBox);
    this.addWidget(new Widget({ node: el('h3', {}, 'Logs') }));
    this.addWidget(this.logs);
    this.poll = new Poll({
      name: `tony-job:${jobId}`,
      factory: () => this.refresh(),
      frequency: FREQUENCY,
      standby: () => !this.isVisible || 'when-hidden'
    });
  }

  readonly jobId: string;

  dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private async refresh(): Promise<void> {
    let detail: JobDetail;
    try {
      detail = await getDetail(this.jobId);
    } catch (e) {
      setText(this.status.node, String(e));
      throw e;
    }
    setText(this.status.node, '');
    this.sections.render(detail);
    this.logs.setTasks(detail.job.tasks.map(t => t.id));
    if (isTerminal(detail.job.state)) {
      this.stacks.ended(); // an ended job has no stacks
      this.poll.dispose(); // a finished job's page does not change
    }
  }

  protected onAfterShow(): void {
    if (!this.poll.isDisposed) {
      void this.poll.refresh();
    }
  }

  private poll: Poll;
  private sections = new JobSections();
  private stacks: StacksButton;
  private stacksBox: Widget;
  private logs: LogSearch;
  private status: Widget;
}

export class JobPage extends MainAreaWidget<JobView> {
  constructor(options: { jobId: string; name?: string }) {
    super({ content: new JobView(options.jobId) });
    this.jobName = options.name || options.jobId;
    this.id = `tony-job-${options.jobId}`;
    this.title.label = `Job · ${this.jobName}`;
    this.title.closable = true;
  }

  readonly jobName: string;

  get jobId(): string {
    return this.content.jobId;
  }
}
