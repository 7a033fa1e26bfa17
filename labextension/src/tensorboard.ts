/**
 * A main-area tab with a job's TensorBoard, through /tony/proxy/<job>/tensorboard/ (the
 * server extension resolves the job's registered endpoint; no host in the URL).
 */
import { IFrame, MainAreaWidget } from '@jupyterlab/apputils';

import { proxyUrl } from './api';

export interface ITensorBoardOptions {
  jobId: string;
  name?: string;
}

export class TensorBoardTab extends MainAreaWidget<IFrame> {
  constructor(options: ITensorBoardOptions) {
    const frame = new IFrame({
      // TensorBoard is a script-driven page a job serves: its scripts run, but in an origin
      // of their own, never Jupyter's (no allow-same-origin; the proxy's answers say the same
      // in their CSP: server_ext/sandbox.py).
      sandbox: ['allow-scripts', 'allow-forms', 'allow-downloads', 'allow-popups']
    });
    frame.url = proxyUrl(options.jobId, 'tensorboard');
    frame.addClass('tony-tensorboard-frame');
    super({ content: frame });
    this.jobId = options.jobId;
    this.jobName = options.name || options.jobId;
    this.id = `tony-tensorboard-${options.jobId}`;
    this.title.label = `TensorBoard · ${this.jobName}`;
    this.title.closable = true;
  }

  readonly jobId: string;
  readonly jobName: string;
}
