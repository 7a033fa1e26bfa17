"""What crosses between the notebook side, the AM and the executors: one typed definition.

By responsibility: the states and the event log's entries (states.py), the job as the AM
reports it (views.py), the executor's messages (executor.py), a session's cells (session.py),
the job client's (notebook.py), the warm YARN AM's spare routes (warmam.py), what every route
shares (common.py), the executor's environment (env.py) and every task's stacks on demand
(stacks.py). Each AM route declares the
records of its body and its answer (am/http.py ``BaseHandler.records``;
tests/am/test_routes_typed.py walks them). This module re-exports them all, so that
``from tony_jupyter.core.protocol import X`` reads any of them.
"""

from .common import ErrorAnswer, NoBody, Ok
from .env import ExecutorEnv, GuardConfig, new_token, token_verifier
from .executor import (
    CHECKPOINT_FENCE,
    Beat,
    CellOutcome,
    ClusterSpecAnswer,
    Credentials,
    HeartbeatAnswer,
    HeartbeatRequest,
    LogBatch,
    RegisterAnswer,
    RegisterRequest,
    Resources,
    ResultRequest,
    TaskCall,
    clean_progress,
    progress_bound,
)
from .notebook import (
    CredentialsAnswer,
    CredentialsRequest,
    EndpointAnswer,
    EndpointRequest,
    EventsAnswer,
    FeedAnswer,
    FeedLog,
    LogsAnswer,
    MetricsAnswer,
    ReasonBody,
    ResultAnswer,
    StateAnswer,
)
from .session import (
    CellList,
    CellLog,
    CellResultRequest,
    CellSubmit,
    CellToRun,
    CellView,
    NextCellAnswer,
)
from .stacks import StackGroup, StackGroups, StacksAnswer, StacksReport, StackThread
from .states import (
    DONE_CELL_STATES,
    DONE_TASK_STATES,
    JOB_ID,
    SCHEMA_VERSION,
    TERMINAL_JOB_STATES,
    CellState,
    Event,
    EventKind,
    JobState,
    TaskState,
)
from .taskid import parse_task_id, task_id
from .views import (
    Amount,
    FailedAttempt,
    GpuUse,
    JobSnapshot,
    JobSummary,
    QueueWait,
    Stall,
    TaskStacks,
    TaskSummary,
    TaskView,
    fmt_duration,
    progress_time,
)
from .warmam import WarmJob, WarmSecret, WarmStatus, WarmTask

__all__ = [
    "new_token",
    "parse_task_id",
    "Amount", "QueueWait",
    "task_id",
    "CHECKPOINT_FENCE",
    "DONE_CELL_STATES", "DONE_TASK_STATES", "JOB_ID", "SCHEMA_VERSION", "TERMINAL_JOB_STATES",
    "Beat", "CellList", "CellLog", "CellOutcome", "CellResultRequest", "CellState",
    "CellSubmit", "CellToRun", "CellView", "ClusterSpecAnswer", "Credentials",
    "CredentialsAnswer", "CredentialsRequest", "EndpointAnswer", "EndpointRequest",
    "ErrorAnswer", "Event", "EventKind", "EventsAnswer", "ExecutorEnv", "FailedAttempt",
    "FeedAnswer", "FeedLog", "GpuUse", "GuardConfig", "HeartbeatAnswer", "HeartbeatRequest",
    "JobSnapshot", "JobState", "JobSummary", "LogBatch", "LogsAnswer", "MetricsAnswer",
    "NextCellAnswer", "NoBody", "Ok", "ReasonBody", "RegisterAnswer", "RegisterRequest",
    "Resources", "ResultAnswer", "ResultRequest", "WarmJob", "WarmSecret", "WarmStatus",
    "WarmTask", "Stall", "StackGroup", "StackGroups", "StackThread", "StacksAnswer",
    "StacksReport", "StateAnswer", "TaskCall", "TaskStacks", "TaskState", "TaskSummary",
    "TaskView", "clean_progress", "fmt_duration", "progress_bound", "progress_time",
    "token_verifier",
]  # fmt: skip
