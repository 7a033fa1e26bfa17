/**
 * A main-area tab with one task's log, followed from an offset while the job runs. Its job,
 * name and task are what the layout restorer saves, so the tab comes back after a reload.
 */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { getJob, getLogs } from './api';
import { el, setText } from './dom';
import { isTerminal } from './protocol';
import type { LogChunk } from './protocol.gen';

const LOG_FREQUENCY = { interval: 1000, backoff: true, max: 30000 };
/** The tab keeps the log's last this many characters: a day-long job's log is not all held. */
export const MAX_LOG_CHARS = 2 << 20;

export interface ILogsOptions {
  jobId: string;
  name?: string;
  /** the task to show first; the chief (the snapshot's first task) when not given */
  task?: string;
  /** the job's task ids when the caller has them; otherwise read from the job */
  tasks?: string[];
}

/** The content of a log tab: a task picker over the log text. */
export class LogsView extends Widget {
  constructor(options: ILogsOptions) {
    super();
    this.jobId = options.jobId;
    this.requested = options.task ?? '';
    this.addClass('tony-logs');
    const bar = el('div', { class: 'tony-logs-bar' });
    this.select = el('select', { class: 'tony-logs-task' });
    this.select.onchange = () => {
      this.restart();
      this._taskChanged.emit(this.task);
    };
    this.status = el('span', { class: 'tony-logs-status' });
    bar.append(el('span', {}, 'task '), this.select, this.status);
    this.pre = el('pre', { class: 'tony-logs-text' });
    this.node.append(bar, this.pre);
    if (options.tasks?.length) {
      this.setTasks(options.tasks, options.task);
      this.restart();
    } else {
      void this.loadTasks(options.task);
    }
  }

  readonly jobId: string;

  /** The task shown now (until the job's tasks are known: the one asked for, or ''). */
  get task(): string {
    return this.select.value || this.requested;
  }

  /** Emitted when the user picks another task (the tracker saves it for the restorer). */
  get taskChanged(): ISignal<this, string> {
    return this._taskChanged;
  }

  dispose(): void {
    this.poll?.dispose();
    super.dispose();
  }

  private setTasks(tasks: string[], selected?: string): void {
    this.select.textContent = '';
    for (const t of tasks) {
      this.select.appendChild(el('option', { value: t }, t));
    }
    if (selected && tasks.includes(selected)) {
      this.select.value = selected;
    }
  }

  /** A restored tab knows only its job (and task): the job's snapshot names its tasks. */
  private async loadTasks(selected?: string): Promise<void> {
    try {
      const job = await getJob(this.jobId);
      this.setTasks(
        job.tasks.map(t => t.id),
        selected
      );
      this.restart();
    } catch (e) {
      setText(this.status, String(e));
    }
  }

  /** Starts following the selected task from its beginning. */
  private restart(): void {
    this.poll?.dispose();
    this.offset = 0;
    this.pre.textContent = '';
    const task = this.select.value;
    if (!task) {
      return;
    }
    const poll: Poll = new Poll({
      name: `tony-logs:${this.jobId}:${task}`,
      factory: (): Promise<void> => this.follow(poll, task),
      frequency: LOG_FREQUENCY,
      standby: () => !this.isVisible || 'when-hidden'
    });
    this.poll = poll;
  }

  /** One tick: the log's new text, and the end of polling once the job has ended. */
  private async follow(poll: Poll, task: string): Promise<void> {
    let got: LogChunk;
    let ended: boolean;
    try {
      got = await getLogs(this.jobId, task, this.offset);
      ended = !got.text && isTerminal((await getJob(this.jobId)).state);
    } catch (e) {
      setText(this.status, String(e));
      throw e; // the poll backs off
    }
    if (poll !== this.poll || poll.isDisposed) {
      return; // another task was picked meanwhile
    }
    setText(this.status, '');
    if (got.text) {
      const atBottom = this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
      this.pre.append(got.text);
      trimHead(this.pre, MAX_LOG_CHARS);
      if (atBottom) {
        this.node.scrollTop = this.node.scrollHeight;
      }
    }
    this.offset = got.offset;
    if (ended) {
      poll.dispose(); // the whole log is here
    }
  }

  protected onAfterShow(): void {
    void this.poll?.refresh();
  }

  private requested: string;
  private offset = 0;
  private poll: Poll | null = null;
  private select: HTMLSelectElement;
  private status: HTMLSpanElement;
  private pre: HTMLPreElement;
  private _taskChanged = new Signal<this, string>(this);
}

/** The log tab: a MainAreaWidget around a LogsView, named for its job. */
export class LogsTab extends MainAreaWidget<LogsView> {
  constructor(options: ILogsOptions) {
    super({ content: new LogsView(options) });
    this.jobName = options.name || options.jobId;
    this.id = `tony-logs-${options.jobId}`;
    this.title.label = `Logs · ${this.jobName}`;
    this.title.closable = true;
  }

  readonly jobName: string;

  get jobId(): string {
    return this.content.jobId;
  }
}

/** Drop the oldest text nodes of ``pre`` (whole chunks) until it holds at most ``max`` characters. */
export function trimHead(pre: HTMLElement, max: number): void {
  let length = pre.textContent?.length ?? 0;
  while (length > max && pre.firstChild && pre.firstChild !== pre.lastChild) {
    length -= pre.firstChild.textContent?.length ?? 0;
    pre.removeChild(pre.firstChild);
  }
}
