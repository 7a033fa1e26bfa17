/* Generated from schema/protocol.schema.json by scripts/gen-types.mjs
   (npm run build:types): do not edit; change the schema and regenerate. */

/**
 * A response of the server extension's REST API (/tony/api/jobs...) that the JupyterLab side panel reads. Field names are exactly those of the Python side: core/protocol/views.py (JobSnapshot, TaskView: am/coordinator.py's Coordinator.snapshot), launcher/client.py and launcher/yarn/jobclient.py (snapshots of a lost job), server_ext/jobs.py (summary) and server_ext/api.py (the handlers). labextension/src/protocol.gen.ts is generated from this file (npm run build:types).
 */
export type TonyProtocol = JobList | JobSnapshot | JobDetail | LogChunk | KillResult | StackGroups;
/**
 * A job's state. NEW, STARTING, RUNNING, SUCCEEDED, FAILED, KILLED: the AM's Coordinator. LOST: the AM is gone and left no final status (launcher/client.py, launcher/yarn/jobclient.py). UNKNOWN: the server could not read the job (server_ext/jobs.py).
 */
export type JobState =
  'NEW' | 'STARTING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'KILLED' | 'LOST' | 'UNKNOWN';
/**
 * A task's state in the current attempt (core/protocol/states.py TaskState; KILLED is one of its DONE_TASK_STATES).
 */
export type TaskState =
  | 'NEW'
  | 'LAUNCHED'
  | 'REGISTERED'
  | 'RUNNING'
  | 'SUCCEEDED'
  | 'FAILED'
  | 'KILLED'
  | 'STOPPING'
  | 'STOPPED';

/**
 * GET /tony/api/jobs: every job, newest first.
 */
export interface JobList {
  jobs: JobSummary[];
}
/**
 * One row of GET /tony/api/jobs (server_ext/jobs.py summary()): what the side panel shows; its progress is the chief task's.
 */
export interface JobSummary {
  job_id: string;
  name: string;
  state: JobState;
  reason: string;
  /**
   * local or yarn
   */
  backend: string;
  attempt: number | null;
  max_attempts: number | null;
  started: number | null;
  finished: number | null;
  tasks: TaskSummary[];
  /**
   * the names of the job's endpoints (the keys of JobSnapshot.endpoints), sorted
   */
  endpoints: string[];
  progress: Progress;
  /**
   * the job is stalled (JobSnapshot.stall): the last new step any task reported; null otherwise
   */
  stalled_since?: number | null;
  /**
   * YARN: what the job waits for, in the RM's figures (waits.py); empty when it does not wait
   */
  waiting?: string;
}
/**
 * One task in JobSummary.tasks.
 */
export interface TaskSummary {
  id: string;
  state: TaskState;
}
/**
 * What a task last reported through its heartbeat (tony_jupyter.progress() / runtime.report): epochs, steps, epoch, epoch_done, step, batch, time and the Keras metrics (loss, accuracy, val_*); values are numbers, strings or null.
 */
export interface Progress {
  [k: string]: number | string | null;
}
/**
 * GET /tony/api/jobs/<job id>: Coordinator.snapshot() from the AM, or the job's saved status.json, or (AM gone, no status) the LOST snapshot of launcher/client.py or launcher/yarn/jobclient.py, which has no failed_task and no chief.
 */
export interface JobSnapshot {
  job_id: string;
  name: string;
  /**
   * local or yarn
   */
  backend: string;
  state: JobState;
  reason: string;
  failed_task?: string | null;
  attempt: number;
  max_attempts: number;
  attempts: FailedAttempt[];
  started: number | null;
  finished: number | null;
  now: number;
  endpoints: Endpoints;
  /**
   * the id of the task whose result is the job's
   */
  chief?: string | null;
  tasks: TaskView[];
  /**
   * the protocol's schema version (tony_jupyter.core.protocol.SCHEMA_VERSION)
   */
  schema_version?: number;
  /**
   * the job has ended but its AM is still writing its history entry: it is reported ended once that is complete
   */
  history_pending?: boolean;
  /**
   * the job is stalled: its tasks heartbeat but none reported a new step for longer than its threshold (am/stalls.py); null otherwise
   */
  stall?: Stall | null;
  /**
   * YARN: the tasks of this attempt whose containers the RM has not allocated yet
   */
  unallocated?: string[];
  /**
   * YARN: the job or some of its containers wait for room in its queue, with the RM's figures (launcher/yarn/waiting.py); null otherwise
   */
  waiting?: QueueWait | null;
}
/**
 * One failed attempt in JobSnapshot.attempts (Coordinator.attempt_history).
 */
export interface FailedAttempt {
  attempt: number;
  reason: string | null;
  /**
   * the task that failed it; null when the AM was lost
   */
  task: string | null;
}
/**
 * The endpoints the job's tasks registered with the AM: name (e.g. tensorboard) -> URL.
 */
export interface Endpoints {
  [k: string]: string;
}
/**
 * One task in JobSnapshot.tasks: the TaskView record of core/protocol/views.py, in its JSON form.
 */
export interface TaskView {
  /**
   * type:index, e.g. worker:0
   */
  id: string;
  type: string;
  index: number;
  tracked: boolean;
  state: TaskState;
  host: string | null;
  port: number | null;
  pid: number | null;
  /**
   * YARN: the task's container id
   */
  container: string | null;
  exit_code: number | null;
  launched_at: number | null;
  registered_at: number | null;
  finished_at: number | null;
  last_heartbeat: number | null;
  rss_bytes: number | null;
  /**
   * the task's CPU use with its children's, from its heartbeats (100 = one core)
   */
  cpu_percent: number | null;
  /**
   * its GPUs' use; empty without nvidia-smi
   */
  gpus: GpuUse[];
  progress: Progress;
  traceback: string | null;
  diagnostics: string;
  /**
   * the task's own attempt: the job's, except for a lost worker of an elastic job replaced alone (a new attempt of that task)
   */
  attempt: number;
}
/**
 * One GPU a task may use, as nvidia-smi --query-gpu reported it in the task's heartbeat (protocol.GpuUse).
 */
export interface GpuUse {
  index: number;
  /**
   * percent
   */
  utilization: number | null;
  memory_used_mb: number | null;
  memory_total_mb: number | null;
}
/**
 * JobSnapshot.stall: since when no task reported a new step, the threshold, the tasks furthest behind, each live task's last step and their stacks (core/protocol/views.py Stall).
 */
export interface Stall {
  /**
   * the last new step any task reported
   */
  since: number;
  /**
   * when the AM marked the job stalled
   */
  marked: number;
  threshold_s: number;
  /**
   * the tasks at the lowest step (none when all are at one)
   */
  behind?: string[];
  /**
   * each live task's last step, in words
   */
  steps?: {
    [k: string]: string;
  };
  /**
   * tony.stall.action: warn, kill or restart
   */
  action?: string;
  stacks?: TaskStacks[];
}
/**
 * One task's stacks as its sidecar dumped them: every thread's Python stack in faulthandler's text, or why there are none (core/protocol/views.py TaskStacks).
 */
export interface TaskStacks {
  task: string;
  text?: string;
  error?: string | null;
  /**
   * the sidecar's time: signal, dump, read
   */
  seconds?: number;
  host?: string | null;
}
/**
 * JobSnapshot.waiting: why a YARN job, or some of its containers, waits, in the ResourceManager's figures for its queue (core/protocol/views.py QueueWait).
 */
export interface QueueWait {
  queue: string;
  /**
   * when the wait began (the application's submission, or first seen)
   */
  since: number;
  /**
   * "AM" while the application is ACCEPTED, else the ids of the tasks without a container
   */
  waiting_for: string[];
  asked: Amount;
  /**
   * the node label they wait in ("" = the default partition)
   */
  partition?: string;
  used: Amount1;
  maximum: Amount2;
  available: Amount3;
  user_used?: Amount4;
  /**
   * the most that user may have in this queue now; null when the RM names no limit
   */
  user_limit?: Amount5 | null;
  am_used?: Amount6;
  am_limit?: Amount7;
  /**
   * the queue's applications accepted or running, submitted before
   */
  apps_ahead?: number;
  /**
   * the queue's applications whose AM is not yet placed
   */
  apps_pending?: number;
  /**
   * the RM's own text for the application
   */
  diagnostics?: string;
}
/**
 * what those containers ask, together
 */
export interface Amount {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * the queue's, in that partition
 */
export interface Amount1 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * the most the queue may have there
 */
export interface Amount2 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * maximum less used
 */
export interface Amount3 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * the job's user's, in this queue
 */
export interface Amount4 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * An amount of YARN resources (core/protocol/views.py Amount).
 */
export interface Amount5 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * An amount of YARN resources (core/protocol/views.py Amount).
 */
export interface Amount6 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * An amount of YARN resources (core/protocol/views.py Amount).
 */
export interface Amount7 {
  memory_mb: number;
  vcores: number;
  /**
   * yarn.io/gpu
   */
  gpus: number;
}
/**
 * GET /tony/api/jobs/<job id>/detail (server_ext/detail.py): the job page and the comparison of runs: the job's snapshot, its spec (spec.json), its attempts and each task's metric series by attempt (metrics.json, written when the job ends).
 */
export interface JobDetail {
  job: JobSnapshot;
  /**
   * the JobSpec's JSON form (spec.py)
   */
  spec: {
    [k: string]: unknown;
  };
  attempts: AttemptSpan[];
  /**
   * attempt number -> task id -> samples, oldest first
   */
  metrics: {
    [k: string]: {
      [k: string]: MetricSample[];
    };
  };
  /**
   * whether the AM wrote the job's history entry (history.json)
   */
  history: boolean;
  /**
   * what of the job's record could not be read and what to do (launcher/damage.py); empty when nothing
   */
  damaged?: string;
  /**
   * the last attempt's GPUs-idle share in words while it stays high (usage.py); empty otherwise
   */
  gpu_idle?: string;
  /**
   * the job is stalled: since when, for how long against its limit, the tasks furthest behind, each task's last step (protocol Stall.text); empty otherwise
   */
  stall?: string;
  /**
   * a stalled job's stacks, grouped, as they were gathered when it was marked; null otherwise
   */
  stall_stacks?: StackGroups | null;
}
/**
 * One attempt of a job on the job page's timeline (server_ext/detail.py): from the Coordinator's attempt events; the last attempt ends when the job did.
 */
export interface AttemptSpan {
  attempt: number;
  started: number | null;
  /**
   * null while the attempt runs
   */
  finished: number | null;
  /**
   * RUNNING, FAILED, or the job's final state (its last attempt)
   */
  state: string;
  reason: string | null;
  /**
   * the task that failed the attempt
   */
  task: string | null;
}
/**
 * One heartbeat's sample of a task (am/metrics.py): t (epoch seconds), what progress()/report() said (step, epoch, loss, ...: numbers only), cpu_percent, rss_bytes, gpus.
 */
export interface MetricSample {
  t: number;
  gpus?: GpuSample[];
  [k: string]: number | GpuSample[] | undefined;
}
/**
 * One GPU in a metric sample (am/metrics.py).
 */
export interface GpuSample {
  index?: number | null;
  utilization?: number | null;
  memory_used_mb?: number | null;
}
/**
 * GET /tony/api/jobs/<job id>/stacks (server_ext/detail.py job_stacks) and JobDetail.stall_stacks: every task's stacks grouped, largest group first; each task's dump time in seconds; the tasks that did not answer in time.
 */
export interface StackGroups {
  groups: StackGroup[];
  seconds: {
    [k: string]: number;
  };
  missing: string[];
}
/**
 * Tasks whose stacks are the same (stackgroups.py): their threads (the executor's own counted in own_threads, not shown); odd: fewer tasks share these than the commonest stacks; behind: a stalled job's task furthest behind is among them (core/protocol/stacks.py).
 */
export interface StackGroup {
  tasks: string[];
  threads: StackThread[];
  own_threads: number;
  odd: boolean;
  behind: boolean;
  /**
   * for tasks that sent no dump: why
   */
  error: string | null;
}
/**
 * One thread of a StackGroup: its name (Python 3.13+) and its frames, most recent first, down to the task's code (core/protocol/stacks.py).
 */
export interface StackThread {
  name: string;
  frames: string[];
}
/**
 * GET /tony/api/jobs/<job id>/logs?task=&offset=&attempt=: a task's log from offset on; offset is where the next read starts.
 */
export interface LogChunk {
  task: string;
  offset: number;
  text: string;
}
/**
 * POST /tony/api/jobs/<job id>/kill.
 */
export interface KillResult {
  killed: boolean;
  state: JobState;
}
