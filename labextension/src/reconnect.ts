/**
 * Each %%tony cell's job back in its cell: when a notebook opens, when its kernel restarts
 * and when a new kernel comes (the Jupyter server restarted), ask the server extension which
 * job each of the notebook's %%tony cells started (GET /tony/api/cells) and put the kernel-free
 * live view (cellview.ts) into each cell whose view is missing or was the kernel's widget,
 * whose model a new page or a new kernel no longer has.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { ICodeCellModel } from '@jupyterlab/cells';
import type { IOutput } from '@jupyterlab/nbformat';

import { cellJobs } from './api';
import { JOB_MIME, jobIdOf } from './cellview';

const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

function isTonyCell(cell: ICodeCellModel): boolean {
  return /^\s*%%tony\b/.test(cell.sharedModel.getSource());
}

function codeCells(panel: NotebookPanel): ICodeCellModel[] {
  const out: ICodeCellModel[] = [];
  const cells = panel.content.model?.cells;
  for (let i = 0; cells && i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type === 'code' && isTonyCell(cell as ICodeCellModel)) {
      out.push(cell as ICodeCellModel);
    }
  }
  return out;
}

function data(output: IOutput): Record<string, unknown> {
  return (output as { data?: Record<string, unknown> }).data ?? {};
}

/** The job's live view into the cell: the kernel's dead widget out, other outputs kept. */
export function showJob(cell: ICodeCellModel, jobId: string, terminal: boolean): boolean {
  const outputs = cell.outputs.toJSON();
  if (outputs.some(o => jobIdOf(data(o)[JOB_MIME]) === jobId)) {
    return false; // its view is there already
  }
  const widget = outputs.some(o => WIDGET_MIME in data(o));
  if (terminal && !widget && outputs.length > 0) {
    return false; // the kernel replaced its view with the final report: nothing to restore
  }
  const kept = outputs.filter(o => !(WIDGET_MIME in data(o)));
  cell.outputs.clear();
  for (const o of kept) {
    cell.outputs.add(o);
  }
  cell.outputs.add({
    output_type: 'display_data',
    data: { [JOB_MIME]: { job_id: jobId }, 'text/plain': `TonY job ${jobId}` },
    metadata: {}
  });
  return true;
}

/** Every %%tony cell of the notebook with its job's view; the number of views put back. */
export async function reconnect(panel: NotebookPanel): Promise<number> {
  const cells = codeCells(panel);
  if (!cells.length) {
    return 0;
  }
  const byId = new Map(cells.map(c => [c.id, c]));
  const { cells: found } = await cellJobs([...byId.keys()]);
  let shown = 0;
  for (const c of found) {
    const cell = byId.get(c.cell_id);
    if (cell && showJob(cell, c.job_id, c.terminal)) {
      shown++;
    }
  }
  panel.node.dataset.tonyReconnected = String(Date.now());
  return shown;
}

/** Reconnect on open, on a kernel restart and on a new kernel (not the first). */
export function watch(panel: NotebookPanel): void {
  const again = () =>
    void reconnect(panel).catch(e => console.warn('tony-jupyter: reconnect failed', e));
  void panel.context.ready.then(again);
  let restarting = false;
  panel.sessionContext.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting') {
      restarting = true;
    } else if (restarting && status === 'idle') {
      restarting = false;
      again();
    }
  });
  let kernels = 0;
  panel.sessionContext.kernelChanged.connect((_, change) => {
    if (change.newValue && kernels++ > 0) {
      again();
    }
  });
}
