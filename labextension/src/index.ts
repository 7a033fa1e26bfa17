/**
 * "TonY jobs": a left side panel listing the user's tony-jupyter jobs (local and YARN, also
 * those of kernels that have died) with live state; opens a job's TensorBoard and logs in
 * main-area tabs, and kills a job. Everything goes through the server extension: /tony/api/...
 * for jobs and /tony/proxy/<job>/<endpoint>/ for TensorBoard, both under Jupyter's auth.
 *
 * The tabs are opened by commands that take the job (and task) as arguments: the panel's
 * buttons run them, and so does the layout restorer after a page reload, as JupyterLab's own
 * extensions restore their documents.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, WidgetTracker } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import { cellViewFactory } from './cellview';
import { CompareTab } from './compare';
import { JobPage } from './jobpage';
import { LogsTab } from './logs';
import { JobsPanel } from './panel';
import { watch } from './reconnect';
import { TensorBoardTab } from './tensorboard';

const CommandIDs = {
  showJobs: 'tony-jupyter:show-jobs',
  openLogs: 'tony-jupyter:open-logs',
  openTensorBoard: 'tony-jupyter:open-tensorboard',
  openJob: 'tony-jupyter:open-job',
  compare: 'tony-jupyter:compare-jobs'
} as const;

function str(args: ReadonlyPartialJSONObject, key: string): string | undefined {
  const value = args[key];
  return typeof value === 'string' && value ? value : undefined;
}

/** Activates the tab the tracker has for this job, if any. */
function focus<T extends Widget & { jobId: string }>(
  app: JupyterFrontEnd,
  tracker: WidgetTracker<T>,
  jobId: string
): T | null {
  const open = tracker.find(w => w.jobId === jobId) ?? null;
  if (open) {
    app.shell.activateById(open.id);
  }
  return open;
}

function addTab<T extends Widget>(app: JupyterFrontEnd, tracker: WidgetTracker<T>, tab: T): T {
  void tracker.add(tab);
  app.shell.add(tab, 'main');
  app.shell.activateById(tab.id);
  return tab;
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
    const { commands } = app;
    const logs = new WidgetTracker<LogsTab>({ namespace: 'tony-logs' });
    const tensorboards = new WidgetTracker<TensorBoardTab>({ namespace: 'tony-tensorboard' });
    const pages = new WidgetTracker<JobPage>({ namespace: 'tony-job' });
    const comparisons = new WidgetTracker<CompareTab>({ namespace: 'tony-compare' });

    commands.addCommand(CommandIDs.openJob, {
      label: args => `TonY job ${str(args, 'name') ?? str(args, 'jobId') ?? ''}`,
      execute: args => {
        const jobId = str(args, 'jobId');
        if (!jobId) {
          throw new Error(`${CommandIDs.openJob} needs a jobId`);
        }
        return (
          focus(app, pages, jobId) ??
          addTab(app, pages, new JobPage({ jobId, name: str(args, 'name') }))
        );
      }
    });

    commands.addCommand(CommandIDs.compare, {
      label: 'Compare TonY jobs',
      execute: args => {
        const jobIds = Array.isArray(args.jobIds) ? args.jobIds.map(String) : [];
        if (jobIds.length < 2) {
          throw new Error(`${CommandIDs.compare} needs two jobIds or more`);
        }
        const open = comparisons.find(w => w.jobIds.join() === jobIds.join());
        if (open) {
          app.shell.activateById(open.id);
          return open;
        }
        return addTab(app, comparisons, new CompareTab(jobIds));
      }
    });

    commands.addCommand(CommandIDs.openLogs, {
      label: args => `Logs of TonY job ${str(args, 'name') ?? str(args, 'jobId') ?? ''}`,
      execute: args => {
        const jobId = str(args, 'jobId');
        if (!jobId) {
          throw new Error(`${CommandIDs.openLogs} needs a jobId`);
        }
        const open = focus(app, logs, jobId);
        if (open) {
          return open;
        }
        const tasks = Array.isArray(args.tasks) ? args.tasks.map(String) : undefined;
        const tab = new LogsTab({ jobId, name: str(args, 'name'), task: str(args, 'task'), tasks });
        // the restorer keeps the task picked last
        tab.content.taskChanged.connect(() => void logs.save(tab));
        return addTab(app, logs, tab);
      }
    });

    commands.addCommand(CommandIDs.openTensorBoard, {
      label: args => `TensorBoard of TonY job ${str(args, 'name') ?? str(args, 'jobId') ?? ''}`,
      execute: args => {
        const jobId = str(args, 'jobId');
        if (!jobId) {
          throw new Error(`${CommandIDs.openTensorBoard} needs a jobId`);
        }
        const open = focus(app, tensorboards, jobId);
        if (open) {
          return open;
        }
        return addTab(app, tensorboards, new TensorBoardTab({ jobId, name: str(args, 'name') }));
      }
    });

    const panel = new JobsPanel({
      openLogs: job =>
        void commands.execute(CommandIDs.openLogs, {
          jobId: job.job_id,
          name: job.name,
          tasks: job.tasks.map(t => t.id)
        }),
      openTensorBoard: job =>
        void commands.execute(CommandIDs.openTensorBoard, { jobId: job.job_id, name: job.name }),
      openJob: job =>
        void commands.execute(CommandIDs.openJob, { jobId: job.job_id, name: job.name }),
      compare: jobs =>
        void commands.execute(CommandIDs.compare, { jobIds: jobs.map(j => j.job_id) })
    });
    app.shell.add(panel, 'left', { rank: 900 });

    commands.addCommand(CommandIDs.showJobs, {
      label: 'Show TonY jobs',
      execute: () => app.shell.activateById(panel.id)
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.showJobs, category: 'TonY' });
    }

    if (restorer) {
      restorer.add(panel, panel.id);
      void restorer.restore(logs, {
        command: CommandIDs.openLogs,
        args: tab => ({ jobId: tab.jobId, name: tab.jobName, task: tab.content.task }),
        name: tab => tab.jobId
      });
      void restorer.restore(tensorboards, {
        command: CommandIDs.openTensorBoard,
        args: tab => ({ jobId: tab.jobId, name: tab.jobName }),
        name: tab => tab.jobId
      });
      void restorer.restore(pages, {
        command: CommandIDs.openJob,
        args: tab => ({ jobId: tab.jobId, name: tab.jobName }),
        name: tab => tab.jobId
      });
      void restorer.restore(comparisons, {
        command: CommandIDs.compare,
        args: tab => ({ jobIds: tab.jobIds }),
        name: tab => tab.jobIds.join(',')
      });
    }
  }
};

/**
 * A %%tony cell's job in its cell without the kernel (cellview.ts), put back into each cell
 * when a notebook opens or its kernel restarts (reconnect.ts); its "Collect result" button
 * runs `%tony result ID` in a new cell below, in the notebook's kernel.
 */
const cellViews: JupyterFrontEndPlugin<void> = {
  id: 'tony-jupyter:cell-views',
  description: "Each %%tony cell's job, live in its cell again after a reload or a restart",
  autoStart: true,
  requires: [IRenderMimeRegistry, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    notebooks: INotebookTracker
  ) => {
    const { commands } = app;
    const collect = (jobId: string, node: HTMLElement) => {
      const panel = notebooks.find(p => p.node.contains(node));
      if (!panel) {
        return;
      }
      const notebook = panel.content;
      const index = notebook.widgets.findIndex(c => c.node.contains(node));
      if (index >= 0) {
        notebook.activeCellIndex = index;
      }
      // a new kernel has not loaded the extension yet: loaded first, out of sight (the
      // kernel runs requests in order, so before the cell below)
      panel.sessionContext.session?.kernel?.requestExecute({
        code: '%load_ext tony_jupyter',
        silent: true,
        store_history: false
      });
      NotebookActions.insertBelow(notebook);
      notebook.activeCell?.model.sharedModel.setSource(`%tony result ${jobId}`);
      void NotebookActions.run(notebook, panel.sessionContext);
    };
    rendermime.addFactory(
      cellViewFactory({
        openJob: jobId => void commands.execute(CommandIDs.openJob, { jobId }),
        openTensorBoard: jobId => void commands.execute(CommandIDs.openTensorBoard, { jobId }),
        openLogs: (jobId, tasks) => void commands.execute(CommandIDs.openLogs, { jobId, tasks }),
        collectResult: collect
      })
    );
    notebooks.widgetAdded.connect((_, panel) => watch(panel));
  }
};

export default [plugin, cellViews];
