/**
 * "TonY jobs": a left side panel listing the user's tony-jupyter jobs (local and YARN, also
 * those of kernels that have died) with live state; opens a job's TensorBoard and logs in
 * main-area tabs, and kills a job. Everything goes through the server extension: /tony/api/...
 * for jobs and /tony/proxy/<job>/<endpoint>/ for TensorBoard, both under Jupyter's auth.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IFrame, MainAreaWidget } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

const POLL_MS = 2000;
const LOG_POLL_MS = 1000;
const TERMINAL = ['SUCCEEDED', 'FAILED', 'KILLED', 'LOST'];

interface IJobSummary {
  job_id: string;
  name: string;
  state: string;
  reason: string;
  backend: string;
  attempt: number | null;
  max_attempts: number | null;
  started: number | null;
  finished: number | null;
  tasks: { id: string; state: string }[];
  endpoints: string[];
  progress: { [key: string]: number | string };
}

const settings = ServerConnection.makeSettings();

async function api(path: string, init: RequestInit = {}): Promise<any> {
  const url = URLExt.join(settings.baseUrl, 'tony/api', path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.message || `${response.status} ${response.statusText}`);
  }
  return body;
}

function proxyUrl(jobId: string, endpoint: string): string {
  return URLExt.join(
    settings.baseUrl,
    'tony/proxy',
    encodeURIComponent(jobId),
    encodeURIComponent(endpoint),
    '/'
  );
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: { [key: string]: string } = {},
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

function progressText(job: IJobSummary): string {
  const p = job.progress || {};
  const bits: string[] = [];
  if (p.epoch !== undefined) {
    bits.push(`epoch ${p.epoch}${p.epochs ? '/' + p.epochs : ''}`);
  }
  if (typeof p.loss === 'number') {
    bits.push(`loss ${p.loss.toFixed(4)}`);
  }
  return bits.join(' · ');
}

/** Logs of one task, followed from an offset while the job runs. */
class LogsView extends Widget {
  constructor(jobId: string, tasks: string[]) {
    super();
    this.jobId = jobId;
    this.addClass('tony-logs');
    const bar = el('div', { class: 'tony-logs-bar' });
    this.select = el('select', { class: 'tony-logs-task' });
    for (const t of tasks) {
      this.select.appendChild(el('option', { value: t }, t));
    }
    this.select.onchange = () => this.restart();
    bar.appendChild(el('span', {}, 'task '));
    bar.appendChild(this.select);
    this.pre = el('pre', { class: 'tony-logs-text' });
    this.node.appendChild(bar);
    this.node.appendChild(this.pre);
    this.restart();
  }

  dispose(): void {
    window.clearTimeout(this.timer);
    super.dispose();
  }

  private restart(): void {
    this.offset = 0;
    this.pre.textContent = '';
    window.clearTimeout(this.timer);
    void this.poll();
  }

  private async poll(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    const task = this.select.value;
    let running = true;
    try {
      const got = await api(
        `jobs/${encodeURIComponent(this.jobId)}/logs?task=${encodeURIComponent(task)}&offset=${this.offset}`
      );
      if (task !== this.select.value) {
        return; // switched task meanwhile
      }
      if (got.text) {
        const atBottom =
          this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
        this.pre.textContent += got.text;
        if (atBottom) {
          this.node.scrollTop = this.node.scrollHeight;
        }
      }
      this.offset = got.offset;
      const job = await api(`jobs/${encodeURIComponent(this.jobId)}`);
      running = !TERMINAL.includes(job.state) || !!got.text;
    } catch (e) {
      this.pre.textContent += `\n[tony] ${e}\n`;
      running = false;
    }
    if (running) {
      this.timer = window.setTimeout(() => void this.poll(), LOG_POLL_MS);
    }
  }

  private jobId: string;
  private offset = 0;
  private timer = 0;
  private select: HTMLSelectElement;
  private pre: HTMLPreElement;
}

/** The side panel: one row per job, newest first. */
class JobsPanel extends Widget {
  constructor(app: JupyterFrontEnd) {
    super();
    this.app = app;
    this.id = 'tony-jobs-panel';
    this.title.caption = 'TonY jobs';
    this.title.label = 'TonY';
    this.addClass('tony-jobs');
    this.node.appendChild(el('h3', {}, 'TonY jobs'));
    this.status = el('div', { class: 'tony-jobs-status' });
    this.list = el('div', { class: 'tony-jobs-list' });
    this.node.appendChild(this.status);
    this.node.appendChild(this.list);
    void this.refresh();
    this.timer = window.setInterval(() => {
      if (this.isVisible) {
        void this.refresh();
      }
    }, POLL_MS);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }

  async refresh(): Promise<void> {
    try {
      const got = await api('jobs');
      this.render(got.jobs as IJobSummary[]);
      this.status.textContent = '';
    } catch (e) {
      this.status.textContent = `cannot list jobs: ${e}`;
    }
  }

  private render(jobs: IJobSummary[]): void {
    this.list.textContent = '';
    if (!jobs.length) {
      this.list.appendChild(el('div', { class: 'tony-empty' }, 'No jobs yet: run a %%tony cell.'));
    }
    for (const job of jobs) {
      const row = el('div', { class: 'tony-job', 'data-job-id': job.job_id });
      const head = el('div', { class: 'tony-job-head' });
      head.appendChild(el('span', { class: 'tony-job-name' }, job.name || job.job_id));
      head.appendChild(
        el('span', { class: `tony-state tony-state-${job.state}`, 'data-state': job.state }, job.state)
      );
      row.appendChild(head);
      const meta = [job.job_id, job.backend, `${job.tasks.length} tasks`, progressText(job)];
      row.appendChild(el('div', { class: 'tony-job-meta' }, meta.filter(Boolean).join(' · ')));
      if (job.reason && job.state !== 'RUNNING') {
        row.appendChild(el('div', { class: 'tony-job-reason' }, job.reason));
      }
      const actions = el('div', { class: 'tony-job-actions' });
      if (job.endpoints.includes('tensorboard')) {
        const tb = el('button', { class: 'jp-Button tony-open-tensorboard' }, 'TensorBoard');
        tb.onclick = () => this.openTensorBoard(job);
        actions.appendChild(tb);
      }
      const logs = el('button', { class: 'jp-Button tony-open-logs' }, 'Logs');
      logs.onclick = () => this.openLogs(job);
      actions.appendChild(logs);
      if (!TERMINAL.includes(job.state)) {
        const kill = el('button', { class: 'jp-Button tony-kill' }, 'Kill');
        kill.onclick = async () => {
          kill.setAttribute('disabled', 'true');
          kill.textContent = 'Killing…';
          try {
            await api(`jobs/${encodeURIComponent(job.job_id)}/kill`, { method: 'POST' });
          } catch (e) {
            this.status.textContent = `kill ${job.job_id}: ${e}`;
          }
          await this.refresh();
        };
        actions.appendChild(kill);
      }
      row.appendChild(actions);
      this.list.appendChild(row);
    }
  }

  private openTensorBoard(job: IJobSummary): void {
    const id = `tony-tensorboard-${job.job_id}`;
    if (this.focus(id)) {
      return;
    }
    const frame = new IFrame({
      // TensorBoard is a script-driven page on this origin (the proxy, behind Jupyter's auth)
      sandbox: ['allow-scripts', 'allow-same-origin', 'allow-forms', 'allow-downloads', 'allow-popups']
    });
    frame.url = proxyUrl(job.job_id, 'tensorboard');
    frame.addClass('tony-tensorboard-frame');
    const widget = new MainAreaWidget({ content: frame });
    widget.id = id;
    widget.title.label = `TensorBoard · ${job.name || job.job_id}`;
    widget.title.closable = true;
    this.app.shell.add(widget, 'main');
    this.app.shell.activateById(id);
  }

  private openLogs(job: IJobSummary): void {
    const id = `tony-logs-${job.job_id}`;
    if (this.focus(id)) {
      return;
    }
    const widget = new MainAreaWidget({
      content: new LogsView(
        job.job_id,
        job.tasks.map(t => t.id)
      )
    });
    widget.id = id;
    widget.title.label = `Logs · ${job.name || job.job_id}`;
    widget.title.closable = true;
    this.app.shell.add(widget, 'main');
    this.app.shell.activateById(id);
  }

  private focus(id: string): boolean {
    for (const w of this.app.shell.widgets('main')) {
      if (w.id === id) {
        this.app.shell.activateById(id);
        return true;
      }
    }
    return false;
  }

  private app: JupyterFrontEnd;
  private timer = 0;
  private status: HTMLDivElement;
  private list: HTMLDivElement;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tony-jupyter:jobs-panel',
  description: 'TonY jobs side panel: live state, TensorBoard, logs, kill',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const panel = new JobsPanel(app);
    app.shell.add(panel, 'left', { rank: 900 });
    if (restorer) {
      restorer.add(panel, panel.id);
    }
    const command = 'tony-jupyter:show-jobs';
    app.commands.addCommand(command, {
      label: 'Show TonY jobs',
      execute: () => app.shell.activateById(panel.id)
    });
    if (palette) {
      palette.addItem({ command, category: 'TonY' });
    }
  }
};

export default plugin;
