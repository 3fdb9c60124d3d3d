"""Layer 2: the durable kernel. Sessions, commits, documents, forks, watches and tasks.

The kernel knows nothing of models, chats or terminals (DESIGN.md section 1). It
builds on ``pi_durable_tui.storage`` only. This module is its one public face:
every name below is imported from here, and from nowhere else.

It has three parts, and its imports run one way, bottom to top:

- the commit line's base (private modules here): ``_errors``, ``_clock``,
  ``_owners`` (ownership arguments), ``_staging`` (what a commit has staged),
  ``_tx`` (``Tx``, the author's handle on it), ``_hooks`` (``SessionHooks``,
  ``Report``) and ``_publication`` (``CommitInfo``);
- ``docs/``: document definitions, drafts, diffs, the document store, fork
  copies, states and watches (imports only ``_errors``);
- ``tasks/``: task definitions, the runtime, the scheduler and its parts
  (imports the commit line's base, and knows the Session only as the narrow
  ``TaskHost`` protocol);
- the commit line's top: ``_line`` (``CommitLine``, the mutation line the parts
  run on) and ``_session`` (``Session``, the public face over it).
"""

from pi_durable_tui.kernel._clock import Clock, ManualClock, SystemClock
from pi_durable_tui.kernel._errors import (
    DocumentAccessError,
    KernelError,
    OwnershipRejected,
    ReadAfterWrite,
    SessionClosed,
    SessionFailed,
    TaskGateClosed,
    TaskNotFound,
    TransactionClosed,
    WaitRejected,
)
from pi_durable_tui.kernel._hooks import Report, SessionHooks
from pi_durable_tui.kernel._line import CloseReason
from pi_durable_tui.kernel._owners import ConversationOwned, Ownerless, TaskOwned
from pi_durable_tui.kernel._publication import CommitInfo
from pi_durable_tui.kernel._session import Session
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.docs import (
    DocChange,
    DocDefinition,
    DocumentState,
    DocumentWatch,
    WatchFrame,
    define_doc,
)
from pi_durable_tui.kernel.tasks import (
    Aborted,
    Completed,
    Failed,
    Running,
    TaskDefinition,
    TaskGraphState,
    TaskRegistry,
    TaskRuntime,
    TaskState,
    Waiting,
    define_task,
)

__all__ = [
    "Aborted",
    "Clock",
    "CloseReason",
    "CommitInfo",
    "Completed",
    "ConversationOwned",
    "DocChange",
    "DocDefinition",
    "DocumentAccessError",
    "DocumentState",
    "DocumentWatch",
    "Failed",
    "KernelError",
    "ManualClock",
    "Ownerless",
    "OwnershipRejected",
    "ReadAfterWrite",
    "Report",
    "Running",
    "Session",
    "SessionClosed",
    "SessionFailed",
    "SessionHooks",
    "SystemClock",
    "TaskDefinition",
    "TaskGateClosed",
    "TaskGraphState",
    "TaskNotFound",
    "TaskOwned",
    "TaskRegistry",
    "TaskRuntime",
    "TaskState",
    "TransactionClosed",
    "Tx",
    "WaitRejected",
    "Waiting",
    "WatchFrame",
    "define_doc",
    "define_task",
]
