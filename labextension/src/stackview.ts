/**
 * Every task's stacks, grouped (GET /tony/api/jobs/<id>/stacks, or a stalled job's stacks as
 * they were gathered): one block per group of tasks with the same stacks, its threads' frames
 * under it; the odd ones out and the tasks furthest behind a stall highlighted. The job page
 * and the side panel's rows show it under their Stacks buttons.
 */
import { getStacks } from './api';
import { el, setText } from './dom';
import type { StackGroup, StackGroups } from './protocol.gen';

function groupNode(g: StackGroup, seconds: { [task: string]: number }): HTMLElement {
  const flags = [g.odd ? 'differs' : '', g.behind ? 'furthest behind' : ''].filter(Boolean);
  const marked = flags.length > 0;
  const box = el('div', {
    class: `tony-stack-group${marked ? ' tony-stack-odd' : ''}`,
    'data-tasks': g.tasks.join(' ')
  });
  const took = g.tasks.map(t => seconds[t]).filter(s => typeof s === 'number');
  const head = el('div', { class: 'tony-stack-tasks' });
  head.append(
    el('b', {}, g.tasks.join(', ')),
    flags.length ? ` (${flags.join(', ')})` : '',
    took.length ? ` · dumped in ${Math.max(...took).toFixed(2)} s` : ''
  );
  box.append(head);
  if (g.error) {
    box.append(el('div', { class: 'tony-stack-error' }, `no stacks: ${g.error}`));
  }
  g.threads.forEach((t, i) => {
    const title = `thread ${i + 1}${t.name ? ` [${t.name}]` : ''}:`;
    box.append(el('pre', { class: 'tony-stack-frames' }, [title, ...t.frames].join('\n  ')));
  });
  if (g.own_threads) {
    box.append(
      el('div', { class: 'tony-stack-own' }, `and ${g.own_threads} thread(s) of tony-jupyter's own`)
    );
  }
  return box;
}

/** The groups, largest first: "N task(s) in M group(s)", then a block per group. */
export function stackGroupsView(stacks: StackGroups, title: string): HTMLElement {
  const box = el('div', { class: 'tony-stacks' });
  const n = Object.keys(stacks.seconds).length;
  box.append(
    el(
      'div',
      { class: 'tony-stacks-title' },
      `${title}: ${n} task(s) in ${stacks.groups.length} group(s) of the same stacks`
    )
  );
  for (const g of stacks.groups) {
    box.append(groupNode(g, stacks.seconds));
  }
  if (stacks.missing.length) {
    box.append(
      el(
        'div',
        { class: 'tony-stack-error' },
        `no answer in time from: ${stacks.missing.join(', ')}`
      )
    );
  }
  return box;
}

/** A Stacks button and the pane it fills: each click asks the job's tasks for their stacks
 * again (a few seconds: each task's sidecar dumps its own). */
export class StacksButton {
  constructor(jobId: string) {
    this.jobId = jobId;
    this.button = el('button', { class: 'jp-Button tony-stacks-button' }, 'Stacks');
    this.button.title = "Every running task's Python stacks, tasks with the same stacks together";
    this.button.onclick = () => void this.fetch();
    this.pane = el('div', { class: 'tony-stacks-pane' });
  }

  /** The job has ended: no stacks to take, and the last ones shown are gone with it. */
  ended(): void {
    this.button.hidden = true;
    this.pane.replaceChildren();
  }

  private async fetch(): Promise<void> {
    this.button.disabled = true;
    setText(this.button, 'Stacks…');
    try {
      const stacks = await getStacks(this.jobId);
      this.pane.replaceChildren(stackGroupsView(stacks, 'stacks now'));
    } catch (e) {
      this.pane.replaceChildren(el('div', { class: 'tony-stack-error' }, String(e)));
    } finally {
      this.button.disabled = false;
      setText(this.button, 'Stacks');
    }
  }

  readonly jobId: string;
  readonly button: HTMLButtonElement;
  readonly pane: HTMLDivElement;
}
