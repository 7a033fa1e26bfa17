/**
 * A %%tony cell's job shown without the kernel: the output `application/vnd.tony.job+json`
 * (`{"job_id": ...}`) rendered from the server extension's API (state, progress, the task
 * table, the chief's last log lines, links to the job page and the logs), polled with backoff
 * so that it survives the Jupyter server going away and coming back. When the job ends it
 * writes a static text/html and text/plain copy of its final state into the same output, so a
 * saved notebook shows that state where no live service is (nbviewer, GitHub). While the job
 * runs, the view acts on it as the side panel does: TensorBoard (when the job serves one),
 * Stacks (every task's, grouped) and Kill, with no kernel needed.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { getJob, getLogs, killJob } from './api';
import { el, setText } from './dom';
import { isTerminal, progressText } from './protocol';
import type { JobSnapshot, TaskView } from './protocol.gen';
import { StacksButton } from './stackview';
import { taskTable } from './tasks';

export const JOB_MIME = 'application/vnd.tony.job+json';
/** The log lines the view keeps and shows: the rest is one click away (the logs tab). */
export const TAIL_LINES = 200;
const FREQUENCY = { interval: 1000, backoff: true, max: 30000 };

/** What the view asks of the extension's commands (index.ts): open a tab, collect a result. */
export interface ICellViewActions {
  openJob(jobId: string): void;
  openTensorBoard(jobId: string): void;
  openLogs(jobId: string, tasks: string[]): void;
  collectResult(jobId: string, node: HTMLElement): void;
}

export function jobIdOf(data: unknown): string {
  const id = (data as { job_id?: unknown } | null)?.job_id;
  return typeof id === 'string' ? id : '';
}

function chiefOf(snap: JobSnapshot): TaskView | undefined {
  return snap.tasks.find(t => t.id === snap.chief) ?? snap.tasks[0];
}

function when(seconds: number | null): string {
  return seconds ? new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19) : '';
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
}

/** The final state as text/plain: what a terminal or a plain viewer shows. */
export function finalText(snap: JobSnapshot, tail: string[]): string {
  const rows = snap.tasks.map(t => `  ${t.id.padEnd(14)} ${t.state.padEnd(10)} ${t.host ?? ''}`);
  return [
    `TonY job ${snap.job_id}: ${snap.state}${snap.reason ? ` (${snap.reason})` : ''}`,
    `ended ${when(snap.finished)} UTC, attempt ${snap.attempt}/${snap.max_attempts}`,
    ...rows,
    `logs: %tony logs ${snap.job_id}; state: %tony status ${snap.job_id}; ` +
      'history: the TonY jobs panel, or `tony list`',
    ...(tail.length ? ['last log lines:', ...tail.slice(-20)] : [])
  ].join('\n');
}

/** The final state as text/html, with no script and no style sheet of ours. */
export function finalHtml(snap: JobSnapshot, tail: string[]): string {
  const rows = snap.tasks
    .map(
      t =>
        `<tr><td>${escape(t.id)}</td><td>${escape(t.state)}</td>` +
        `<td>${escape(t.host ?? '')}</td><td>${t.exit_code ?? ''}</td></tr>`
    )
    .join('');
  const id = escape(snap.job_id);
  return (
    `<div class="tony-final" data-tony-job="${id}" data-tony-state="${escape(snap.state)}">` +
    `<p><b>TonY job ${id}: ${escape(snap.state)}</b>` +
    `${snap.reason ? ` (${escape(snap.reason)})` : ''}, ended ${escape(when(snap.finished))} UTC,` +
    ` attempt ${snap.attempt}/${snap.max_attempts}</p>` +
    `<table><tr><th>task</th><th>state</th><th>host</th><th>exit</th></tr>${rows}</table>` +
    `<p>Logs: <code>%tony logs ${id}</code>; state: <code>%tony status ${id}</code>; ` +
    'history: the TonY jobs panel, or <code>tony list</code>.</p>' +
    (tail.length ? `<pre>${escape(tail.slice(-20).join('\n'))}</pre>` : '') +
    '</div>'
  );
}

/** The renderer of one such output. */
export class CellJobView extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly actions: ICellViewActions) {
    super();
    this.addClass('tony-cell-view');
    this.head = el('div', { class: 'tony-cell-head' });
    this.status = el('span', { class: 'tony-cell-status' });
    this.progress = el('span', { class: 'tony-cell-progress' });
    this.tasks = el('div', { class: 'tony-cell-tasks' });
    this.logs = el('pre', { class: 'tony-cell-logs' });
    const bar = el('div', { class: 'tony-cell-bar' });
    const page = el('button', { class: 'jp-mod-styled tony-cell-page' }, 'Job page');
    page.onclick = () => this.actions.openJob(this.jobId);
    const logs = el('button', { class: 'jp-mod-styled tony-cell-all-logs' }, 'All logs');
    logs.onclick = () => this.actions.openLogs(this.jobId, this.taskIds);
    this.collect = el('button', { class: 'jp-mod-styled tony-cell-collect' }, 'Collect result');
    this.collect.onclick = () => this.actions.collectResult(this.jobId, this.node);
    this.collect.hidden = true;
    this.tensorboard = el(
      'button',
      { class: 'jp-mod-styled tony-cell-tensorboard' },
      'TensorBoard'
    );
    this.tensorboard.onclick = () => this.actions.openTensorBoard(this.jobId);
    this.tensorboard.hidden = true;
    this.kill = el('button', { class: 'jp-mod-styled tony-cell-kill' }, 'Kill');
    this.kill.onclick = () => void this.killJob();
    this.kill.hidden = true;
    this.stacksSlot = el('span');
    this.stacksPane = el('div');
    bar.append(page, logs, this.tensorboard, this.stacksSlot, this.kill, this.collect);
    this.head.append(this.status, this.progress);
    this.node.append(this.head, bar, this.stacksPane, this.tasks, this.logs);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    const jobId = jobIdOf(model.data[JOB_MIME]);
    if (jobId === this.jobId) {
      return Promise.resolve();
    }
    this.jobId = jobId;
    this.poll?.dispose();
    this.offset = 0;
    this.lines = [];
    if (!jobId) {
      setText(this.status, 'not a TonY job output (no job_id)');
      return Promise.resolve();
    }
    setText(this.status, `TonY job ${jobId}: connecting...`);
    this.stacks = new StacksButton(jobId);
    this.stacks.button.hidden = true;
    this.stacksSlot.replaceChildren(this.stacks.button);
    this.stacksPane.replaceChildren(this.stacks.pane);
    this.poll = new Poll({ factory: () => this.tick(), frequency: FREQUENCY, standby: 'never' });
    return Promise.resolve();
  }

  dispose(): void {
    this.poll?.dispose();
    super.dispose();
  }

  private async tick(): Promise<void> {
    let snap: JobSnapshot;
    try {
      snap = await getJob(this.jobId);
    } catch (e) {
      setText(this.status, `TonY job ${this.jobId}: ${String(e)}; retrying`);
      this.node.dataset.tonyState = 'UNREACHABLE';
      throw e; // the poll backs off
    }
    this.taskIds = snap.tasks.map(t => t.id);
    await this.readLogs(snap);
    const ended = isTerminal(snap.state) && !snap.history_pending;
    setText(
      this.status,
      `TonY job ${snap.job_id}: ${snap.state}${snap.reason ? ` (${snap.reason})` : ''}`
    );
    this.node.dataset.tonyState = snap.state;
    setText(this.progress, progressText({ progress: chiefOf(snap)?.progress }));
    this.tasks.replaceChildren(taskTable(snap.tasks));
    setText(this.logs, this.lines.join('\n'));
    this.logs.scrollTop = this.logs.scrollHeight;
    const live = !isTerminal(snap.state);
    this.tensorboard.hidden = !live || !('tensorboard' in snap.endpoints);
    this.kill.hidden = !live;
    if (this.stacks) {
      this.stacks.button.hidden = snap.state !== 'RUNNING';
      if (!live) {
        this.stacks.ended();
      }
    }
    if (ended) {
      this.collect.hidden = snap.state !== 'SUCCEEDED';
      this.keepFinal(snap);
      this.poll?.dispose();
    }
  }

  /** Kill the job through the server (as the side panel does); the poll shows the outcome. */
  private async killJob(): Promise<void> {
    this.kill.disabled = true;
    setText(this.kill, 'Killing…');
    try {
      await killJob(this.jobId);
    } catch (e) {
      setText(this.status, `kill ${this.jobId}: ${String(e)}`);
    } finally {
      this.kill.disabled = false;
      setText(this.kill, 'Kill');
    }
  }

  /** The chief's log since what was read: its last TAIL_LINES lines kept. */
  private async readLogs(snap: JobSnapshot): Promise<void> {
    const chief = chiefOf(snap);
    if (!chief) {
      return;
    }
    try {
      for (let i = 0; i < 20; i++) {
        const chunk = await getLogs(this.jobId, chief.id, this.offset);
        if (chunk.offset === this.offset) {
          break;
        }
        this.offset = chunk.offset;
        const text = this.partial + chunk.text;
        const parts = text.split('\n');
        this.partial = parts.pop() ?? '';
        this.lines = this.lines.concat(parts).slice(-TAIL_LINES);
      }
    } catch {
      // no log yet (the task not started): the next tick reads it
    }
  }

  /** The final state into the output's own data (text/html, text/plain), once. */
  private keepFinal(snap: JobSnapshot): void {
    const model = this.model;
    if (!model) {
      return;
    }
    const html = finalHtml(snap, this.lines);
    if (model.data['text/html'] === html) {
      return;
    }
    model.setData({
      data: { ...model.data, 'text/html': html, 'text/plain': finalText(snap, this.lines) }
    });
  }

  jobId = '';
  private model: IRenderMime.IMimeModel | null = null;
  private poll: Poll | null = null;
  private offset = 0;
  private partial = '';
  private lines: string[] = [];
  private taskIds: string[] = [];
  private readonly head: HTMLDivElement;
  private readonly status: HTMLSpanElement;
  private readonly progress: HTMLSpanElement;
  private readonly tasks: HTMLDivElement;
  private readonly logs: HTMLPreElement;
  private readonly collect: HTMLButtonElement;
  private readonly tensorboard: HTMLButtonElement;
  private readonly kill: HTMLButtonElement;
  private readonly stacksSlot: HTMLSpanElement;
  private readonly stacksPane: HTMLDivElement;
  private stacks: StacksButton | null = null;
}

/** The renderer factory for JupyterLab's rendermime registry: safe (it runs no script). */
export function cellViewFactory(actions: ICellViewActions): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [JOB_MIME],
    defaultRank: 10, // ahead of text/html (50): in JupyterLab the live view wins
    createRenderer: () => new CellJobView(actions)
  };
}
