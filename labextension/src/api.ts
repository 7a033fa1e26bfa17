/**
 * The server extension's REST API, /tony/api/jobs..., and the URL of a job's endpoint through
 * /tony/proxy/<job>/<endpoint>/, both under Jupyter's base URL and auth.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  JobDetail,
  JobList,
  JobSnapshot,
  KillResult,
  LogChunk,
  StackGroups
} from './protocol.gen';

const settings = ServerConnection.makeSettings();

async function request<T>(path: string, init: RequestInit = {}): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'tony/api', path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const body: unknown = await response.json().catch(() => ({}));
  if (!response.ok) {
    // jupyter_server's APIHandler words its errors as {"message": ...}
    const message = (body as { message?: string }).message;
    throw new Error(message || `${response.status} ${response.statusText}`);
  }
  return body as T;
}

function jobPath(jobId: string, rest = ''): string {
  return `jobs/${encodeURIComponent(jobId)}${rest}`;
}

export function listJobs(): Promise<JobList> {
  return request<JobList>('jobs');
}

export function getJob(jobId: string): Promise<JobSnapshot> {
  return request<JobSnapshot>(jobPath(jobId));
}

/** The job page's data: snapshot, spec, attempts, metric series (server_ext/detail.py). */
export function getDetail(jobId: string): Promise<JobDetail> {
  return request<JobDetail>(jobPath(jobId, '/detail'));
}

/** Every running task's stacks, grouped (server_ext/detail.py job_stacks). */
export function getStacks(jobId: string): Promise<StackGroups> {
  return request<StackGroups>(jobPath(jobId, '/stacks'));
}

export function getLogs(jobId: string, task: string, offset: number): Promise<LogChunk> {
  const query = `?task=${encodeURIComponent(task)}&offset=${offset}`;
  return request<LogChunk>(jobPath(jobId, `/logs${query}`));
}

export function killJob(jobId: string): Promise<KillResult> {
  return request<KillResult>(jobPath(jobId, '/kill'), { method: 'POST' });
}

export function proxyUrl(jobId: string, endpoint: string): string {
  return URLExt.join(
    settings.baseUrl,
    'tony/proxy',
    encodeURIComponent(jobId),
    encodeURIComponent(endpoint),
    '/'
  );
}

/** The newest job of each of these notebook cells (server_ext/cells.py). */
export interface ICellJob {
  cell_id: string;
  job_id: string;
  state: string;
  terminal: boolean;
  notebook: string;
  submitted: number;
}

export function cellJobs(cellIds: string[]): Promise<{ cells: ICellJob[] }> {
  return request<{ cells: ICellJob[] }>(`cells?ids=${cellIds.map(encodeURIComponent).join(',')}`);
}
